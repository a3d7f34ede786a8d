/* tls.c - see tls.h. */
#include "tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openssl_api.h"

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

  while ((e = ossl.ERR_get_error()) != 0 && n < errlen) {
    n += (size_t)snprintf(err + n, errlen - n, ": ");
    if (n < errlen) ossl.ERR_error_string_n(e, err + n, errlen - n);
    n += strlen(err + n);
  }
}

tls_server *tls_server_new(const char *cert, const char *key, const char *ca,
                           bool verify_client, char *err, size_t errlen)
{
  tls_server *s;
  char what[512];

  if (openssl_api_load(err, errlen) != 0) return NULL;
  s = calloc(1, sizeof *s);
  ossl.ERR_clear_error();
  if (!s || !(s->ctx = ossl.SSL_CTX_new(ossl.TLS_server_method()))) {
    openssl_reason("cannot make a TLS context", err, errlen);
    free(s);
    return NULL;
  }
  /* RFC 5425 asks for TLS 1.2 at least. */
  ossl.SSL_CTX_ctrl(s->ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
  if (ossl.SSL_CTX_use_certificate_chain_file(s->ctx, cert) != 1) {
    snprintf(what, sizeof what, "tls.cert %s", cert);
  } else if (ossl.SSL_CTX_use_PrivateKey_file(s->ctx, key, SSL_FILETYPE_PEM) != 1) {
    snprintf(what, sizeof what, "tls.key %s", key);
  } else if (ossl.SSL_CTX_check_private_key(s->ctx) != 1) {
    snprintf(what, sizeof what, "tls.key %s does not match tls.cert %s", key,
             cert);
  } else if (ca && ossl.SSL_CTX_load_verify_locations(s->ctx, ca, NULL) != 1) {
    snprintf(what, sizeof what, "tls.ca %s", ca);
  } else {
    if (ca)
      ossl.SSL_CTX_set_verify(s->ctx, SSL_VERIFY_PEER |
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
  ossl.SSL_CTX_free(s->ctx);
  free(s);
}

/* A session of ctx on two memory BIOs, neither side chosen yet. */
static tls_session *session_new(SSL_CTX *ctx)
{
  tls_session *t = calloc(1, sizeof *t);

  if (!t) return NULL;
  t->ssl = ossl.SSL_new(ctx);
  t->in = ossl.BIO_new(ossl.BIO_s_mem());
  t->out = ossl.BIO_new(ossl.BIO_s_mem());
  if (!t->ssl || !t->in || !t->out) {
    ossl.SSL_free(t->ssl);
    ossl.BIO_free(t->in);
    ossl.BIO_free(t->out);
    free(t);
    return NULL;
  }
  ossl.SSL_set_bio(t->ssl, t->in, t->out); /* the SSL owns them now */
  return t;
}

tls_session *tls_session_new(tls_server *s)
{
  tls_session *t = session_new(s->ctx);

  if (t) ossl.SSL_set_accept_state(t->ssl);
  return t;
}

void tls_session_free(tls_session *t)
{
  if (!t) return;
  ossl.SSL_free(t->ssl);
  free(t);
}

bool tls_session_ready(const tls_session *t)
{
  return ossl.SSL_is_init_finished(t->ssl);
}

bool tls_session_closed(const tls_session *t)
{
  return t->closed;
}

/* What OpenSSL wrote for the peer goes to out. */
static int take_output(tls_session *t, buf *out)
{
  size_t pending = ossl.BIO_ctrl_pending(t->out);

  if (pending == 0) return 0;
  if (!buf_reserve(out, pending)) return -1;
  out->len += (size_t)ossl.BIO_read(t->out, out->data + out->len, (int)pending);
  return 0;
}

int tls_session_feed(tls_session *t, const char *bytes, size_t len,
                     tls_plain_fn fn, void *ud, buf *out, char *err,
                     size_t errlen)
{
  char plain[16384];
  int n = 0, rc = 0;

  ossl.ERR_clear_error();
  if (len > 0 && ossl.BIO_write(t->in, bytes, (int)len) != (int)len) {
    openssl_reason("cannot buffer TLS input", err, errlen);
    return -1;
  }
  /* SSL_read does the handshake first; it reads until the memory BIO is
   * empty, so nothing decrypted stays behind. */
  while (!t->closed && (n = ossl.SSL_read(t->ssl, plain, sizeof plain)) > 0)
    fn(ud, plain, (size_t)n);
  if (!t->closed) {
    switch (ossl.SSL_get_error(t->ssl, n)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      break;
    case SSL_ERROR_ZERO_RETURN:
      t->closed = true;
      break;
    default:
      openssl_reason(ossl.SSL_is_init_finished(t->ssl) ? "TLS session failed"
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
  tls_client *c;
  char what[512];
  int loaded;

  if (openssl_api_load(err, errlen) != 0) return NULL;
  c = calloc(1, sizeof *c);
  ossl.ERR_clear_error();
  if (!c || !(c->ctx = ossl.SSL_CTX_new(ossl.TLS_client_method()))) {
    openssl_reason("cannot make a TLS context", err, errlen);
    free(c);
    return NULL;
  }
  ossl.SSL_CTX_ctrl(c->ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
  loaded = ca ? ossl.SSL_CTX_load_verify_locations(c->ctx, ca, NULL)
              : ossl.SSL_CTX_set_default_verify_paths(c->ctx);
  if (loaded != 1) {
    snprintf(what, sizeof what, "tls_ca %s", ca ? ca : "(the system's)");
  } else if (cert && ossl.SSL_CTX_use_certificate_chain_file(c->ctx, cert) != 1) {
    snprintf(what, sizeof what, "tls_cert %s", cert);
  } else if (key && ossl.SSL_CTX_use_PrivateKey_file(c->ctx, key,
                                                SSL_FILETYPE_PEM) != 1) {
    snprintf(what, sizeof what, "tls_key %s", key);
  } else if (cert && ossl.SSL_CTX_check_private_key(c->ctx) != 1) {
    snprintf(what, sizeof what, "tls_key %s does not match tls_cert %s", key,
             cert);
  } else {
    /* A server that cannot prove who it is gets nothing. */
    ossl.SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    return c;
  }
  openssl_reason(what, err, errlen);
  tls_client_free(c);
  return NULL;
}

void tls_client_free(tls_client *c)
{
  if (!c) return;
  ossl.SSL_CTX_free(c->ctx);
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
  ossl.SSL_set_connect_state(t->ssl);
  param = ossl.SSL_get0_param(t->ssl);
  /* An address is checked against the certificate's IP names; SNI is for
   * host names only (RFC 6066). */
  if (is_ip ? ossl.X509_VERIFY_PARAM_set1_ip_asc(param, server_name) != 1
            : ossl.SSL_ctrl(t->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME,
                            TLSEXT_NAMETYPE_host_name,
                            (void *)server_name) != 1 ||
              ossl.SSL_set1_host(t->ssl, server_name) != 1) {
    tls_session_free(t);
    return NULL;
  }
  return t;
}

int tls_session_start(tls_session *t, buf *out, char *err, size_t errlen)
{
  int n;

  ossl.ERR_clear_error();
  n = ossl.SSL_do_handshake(t->ssl);
  if (n != 1) {
    int e = ossl.SSL_get_error(t->ssl, n);
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
  ossl.ERR_clear_error();
  /* Memory BIOs grow: SSL_write takes all of it at once, in TLS records
   * of at most 16 KiB each. */
  while (len > 0) {
    int chunk = len > (1u << 30) ? 1 << 30 : (int)len;
    int n = ossl.SSL_write(t->ssl, plain, chunk);
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
