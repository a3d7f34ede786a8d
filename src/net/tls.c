/* tls.c - see tls.h. */
#include "tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

struct tls_server {
  SSL_CTX *ctx;
};

struct tls_client {
  SSL_CTX *ctx;
};

struct tls_session {
  SSL *ssl;
  BIO *in, *out;   /* memory: what the peer sent, what goes back */
  bool closed;
};

/* OpenSSL's queued errors, oldest first, as one line. */
static void openssl_reason(const char *what, char *err, size_t errlen)
{
  size_t n = (size_t)snprintf(err, errlen, "%s", what);
  unsigned long e;

  while ((e = ERR_get_error()) != 0 && n < errlen) {
    n += (size_t)snprintf(err + n, errlen - n, ": ");
    if (n < errlen) ERR_error_string_n(e, err + n, errlen - n);
    n += strlen(err + n);
  }
}

tls_server *tls_server_new(const char *cert, const char *key, const char *ca,
                           bool verify_client, char *err, size_t errlen)
{
  tls_server *s = calloc(1, sizeof *s);
  char what[512];

  ERR_clear_error();
  if (!s || !(s->ctx = SSL_CTX_new(TLS_server_method()))) {
    openssl_reason("cannot make a TLS context", err, errlen);
    free(s);
    return NULL;
  }
  /* RFC 5425 asks for TLS 1.2 at least. */
  SSL_CTX_set_min_proto_version(s->ctx, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(s->ctx, cert) != 1) {
    snprintf(what, sizeof what, "tls.cert %s", cert);
  } else if (SSL_CTX_use_PrivateKey_file(s->ctx, key, SSL_FILETYPE_PEM) != 1) {
    snprintf(what, sizeof what, "tls.key %s", key);
  } else if (SSL_CTX_check_private_key(s->ctx) != 1) {
    snprintf(what, sizeof what, "tls.key %s does not match tls.cert %s", key,
             cert);
  } else if (ca && SSL_CTX_load_verify_locations(s->ctx, ca, NULL) != 1) {
    snprintf(what, sizeof what, "tls.ca %s", ca);
  } else {
    if (ca)
      SSL_CTX_set_verify(s->ctx, SSL_VERIFY_PEER |
                         (verify_client ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                         NULL);
    return s;
  }
  openssl_reason(what, err, errlen);
  tls_server_free(s);
  return NULL;
}

void tls_server_free(tls_server *s)
{
  if (!s) return;
  SSL_CTX_free(s->ctx);
  free(s);
}

/* A session of ctx on two memory BIOs, neither side chosen yet. */
static tls_session *session_new(SSL_CTX *ctx)
{
  tls_session *t = calloc(1, sizeof *t);

  if (!t) return NULL;
  t->ssl = SSL_new(ctx);
  t->in = BIO_new(BIO_s_mem());
  t->out = BIO_new(BIO_s_mem());
  if (!t->ssl || !t->in || !t->out) {
    SSL_free(t->ssl);
    BIO_free(t->in);
    BIO_free(t->out);
    free(t);
    return NULL;
  }
  SSL_set_bio(t->ssl, t->in, t->out); /* the SSL owns them now */
  return t;
}

tls_session *tls_session_new(tls_server *s)
{
  tls_session *t = session_new(s->ctx);

  if (t) SSL_set_accept_state(t->ssl);
  return t;
}

void tls_session_free(tls_session *t)
{
  if (!t) return;
  SSL_free(t->ssl);
  free(t);
}

bool tls_session_ready(const tls_session *t)
{
  return SSL_is_init_finished(t->ssl);
}

bool tls_session_closed(const tls_session *t)
{
  return t->closed;
}

/* What OpenSSL wrote for the peer goes to out. */
static int take_output(tls_session *t, buf *out)
{
  size_t pending = BIO_ctrl_pending(t->out);

  if (pending == 0) return 0;
  if (!buf_reserve(out, pending)) return -1;
  out->len += (size_t)BIO_read(t->out, out->data + out->len, (int)pending);
  return 0;
}

int tls_session_feed(tls_session *t, const char *bytes, size_t len,
                     tls_plain_fn fn, void *ud, buf *out, char *err,
                     size_t errlen)
{
  char plain[16384];
  int n = 0, rc = 0;

  ERR_clear_error();
  if (len > 0 && BIO_write(t->in, bytes, (int)len) != (int)len) {
    openssl_reason("cannot buffer TLS input", err, errlen);
    return -1;
  }
  /* SSL_read does the handshake first; it reads until the memory BIO is
   * empty, so nothing decrypted stays behind. */
  while (!t->closed && (n = SSL_read(t->ssl, plain, sizeof plain)) > 0)
    fn(ud, plain, (size_t)n);
  if (!t->closed) {
    switch (SSL_get_error(t->ssl, n)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      break;
    case SSL_ERROR_ZERO_RETURN:
      t->closed = true;
      break;
    default:
      openssl_reason(SSL_is_init_finished(t->ssl) ? "TLS session failed"
                                                  : "TLS handshake failed",
                     err, errlen);
      rc = -1;
    }
  }
  if (take_output(t, out) != 0 && rc == 0) {
    snprintf(err, errlen, "out of memory for TLS output");
    rc = -1;
  }
  return rc;
}

/* ---- the client side ---- */

tls_client *tls_client_new(const char *ca, const char *cert, const char *key,
                           char *err, size_t errlen)
{
  tls_client *c = calloc(1, sizeof *c);
  char what[512];
  int loaded;

  ERR_clear_error();
  if (!c || !(c->ctx = SSL_CTX_new(TLS_client_method()))) {
    openssl_reason("cannot make a TLS context", err, errlen);
    free(c);
    return NULL;
  }
  SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
  loaded = ca ? SSL_CTX_load_verify_locations(c->ctx, ca, NULL)
              : SSL_CTX_set_default_verify_paths(c->ctx);
  if (loaded != 1) {
    snprintf(what, sizeof what, "tls_ca %s", ca ? ca : "(the system's)");
  } else if (cert && SSL_CTX_use_certificate_chain_file(c->ctx, cert) != 1) {
    snprintf(what, sizeof what, "tls_cert %s", cert);
  } else if (key && SSL_CTX_use_PrivateKey_file(c->ctx, key,
                                                SSL_FILETYPE_PEM) != 1) {
    snprintf(what, sizeof what, "tls_key %s", key);
  } else if (cert && SSL_CTX_check_private_key(c->ctx) != 1) {
    snprintf(what, sizeof what, "tls_key %s does not match tls_cert %s", key,
             cert);
  } else {
    /* A server that cannot prove who it is gets nothing. */
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    return c;
  }
  openssl_reason(what, err, errlen);
  tls_client_free(c);
  return NULL;
}

void tls_client_free(tls_client *c)
{
  if (!c) return;
  SSL_CTX_free(c->ctx);
  free(c);
}

tls_session *tls_client_session_new(tls_client *c, const char *server_name)
{
  tls_session *t = session_new(c->ctx);
  unsigned char ip[16];
  bool is_ip = inet_pton(AF_INET, server_name, ip) == 1 ||
               inet_pton(AF_INET6, server_name, ip) == 1;
  X509_VERIFY_PARAM *param;

  if (!t) return NULL;
  SSL_set_connect_state(t->ssl);
  param = SSL_get0_param(t->ssl);
  /* An address is checked against the certificate's IP names; SNI is for
   * host names only (RFC 6066). */
  if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name) != 1
            : SSL_set_tlsext_host_name(t->ssl, server_name) != 1 ||
              SSL_set1_host(t->ssl, server_name) != 1) {
    tls_session_free(t);
    return NULL;
  }
  return t;
}

int tls_session_start(tls_session *t, buf *out, char *err, size_t errlen)
{
  int n;

  ERR_clear_error();
  n = SSL_do_handshake(t->ssl);
  if (n != 1) {
    int e = SSL_get_error(t->ssl, n);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      openssl_reason("TLS handshake failed", err, errlen);
      return -1;
    }
  }
  if (take_output(t, out) != 0) {
    snprintf(err, errlen, "out of memory for TLS output");
    return -1;
  }
  return 0;
}

int tls_session_write(tls_session *t, const char *plain, size_t len, buf *out,
                      char *err, size_t errlen)
{
  ERR_clear_error();
  /* Memory BIOs grow: SSL_write takes all of it at once, in TLS records
   * of at most 16 KiB each. */
  while (len > 0) {
    int chunk = len > (1u << 30) ? 1 << 30 : (int)len;
    int n = SSL_write(t->ssl, plain, chunk);
    if (n <= 0) {
      openssl_reason("TLS write failed", err, errlen);
      return -1;
    }
    plain += n;
    len -= (size_t)n;
  }
  if (take_output(t, out) != 0) {
    snprintf(err, errlen, "out of memory for TLS output");
    return -1;
  }
  return 0;
}
