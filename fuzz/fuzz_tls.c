/*
 * fuzz_tls.c - the TLS glue (src/net/tls.c): sessions fed from memory with
 * random bytes before, after or instead of a handshake.
 *
 * At startup the target makes a P-256 key and a self-signed certificate for
 * "localhost" in memory, writes them to a temporary directory (tls_server_new
 * and tls_client_new take file paths; the directory goes at exit), and makes
 * one server and one client context that trusts the certificate.
 *
 * Input: [0] op, [1] flight, [2] offset, [3] seed, then the bytes G.
 *   op % 3 == 0: a server session is fed G alone, in random chunks (the cuts
 *                from seed): no handshake can complete, so nothing may be
 *                handed on as plain text.
 *   op % 3 == 1: a client session starts and is fed G as the server's
 *                reply: again nothing may be handed on.
 *   op % 3 == 2: a real handshake between a client and a server session,
 *                then the client sends a known text in two writes. The
 *                bytes of one flight (flight % 4: 0 the ClientHello, 1 the
 *                client's Finished, 2 and 3 the text's two records; op
 *                bit 2: the server's flight instead, to fuzz the client)
 *                get G inserted at offset (op bit 3: xored over them there
 *                instead). Whatever the server hands on must be a prefix of
 *                the text sent (records are authenticated), all of it when
 *                G was empty.
 * Always: plain text only once tls_session_ready; no crash, no leak.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], cert_path[96], key_path[96];
static tls_server *server;
static tls_client *client;

static void cleanup(void)
{
  tls_server_free(server);
  tls_client_free(client);
  unlink(cert_path);
  unlink(key_path);
  rmdir(dir);
}

/* The key and self-signed certificate, written as PEM files. */
static void make_cert(void)
{
  EVP_PKEY *pkey = EVP_EC_gen("P-256");
  X509 *x = X509_new();
  if (!pkey || !x) abort();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24 * 365);
  X509_set_pubkey(x, pkey);
  X509_NAME *name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             (const unsigned char *)"localhost", -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name,
                                            "DNS:localhost");
  if (!ext || !X509_add_ext(x, ext, -1)) abort();
  X509_EXTENSION_free(ext);
  if (!X509_sign(x, pkey, EVP_sha256())) abort();

  FILE *f = fopen(cert_path, "w");
  if (!f || !PEM_write_X509(f, x)) abort();
  fclose(f);
  f = fopen(key_path, "w");
  if (!f || !PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL))
    abort();
  fclose(f);
  X509_free(x);
  EVP_PKEY_free(pkey);
}

static void setup(void)
{
  char err[512];
  snprintf(dir, sizeof dir, "%s/lj-fuzz-tls-XXXXXX",
           access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
  if (!mkdtemp(dir)) abort();
  snprintf(cert_path, sizeof cert_path, "%s/cert.pem", dir);
  snprintf(key_path, sizeof key_path, "%s/key.pem", dir);
  atexit(cleanup);
  make_cert();
  server = tls_server_new(cert_path, key_path, NULL, false, err, sizeof err);
  client = tls_client_new(cert_path, NULL, NULL, err, sizeof err);
  if (!server || !client) {
    fprintf(stderr, "fuzz_tls setup: %s\n", err);
    abort();
  }
}

/* What a session handed on, checked as it comes. */
typedef struct {
  tls_session *t;
  buf plain;
} sink;

static void on_plain(void *ud, const char *bytes, size_t len)
{
  sink *s = ud;
  if (!tls_session_ready(s->t)) {
    fprintf(stderr, "plain text before the handshake was done\n");
    abort();
  }
  if (!buf_append(&s->plain, bytes, len)) abort();
}

/* Feeds bytes to t in random chunks (1..64, sometimes all the rest);
 * -1 once the session failed. */
static int feed(sink *s, const uint8_t *bytes, size_t len, uint32_t *rng,
                buf *out)
{
  char err[512];
  do {
    *rng = *rng * 1103515245u + 12345u;
    size_t n = (*rng >> 16) % 8 == 0 ? len : 1 + (*rng >> 16) % 64;
    if (n > len) n = len;
    if (tls_session_feed(s->t, (const char *)bytes, n, on_plain, s, out, err,
                         sizeof err) != 0)
      return -1;
    bytes += n;
    len -= n;
  } while (len > 0);
  return 0;
}

/* G spliced into a flight's bytes at off; whether they changed. */
static bool tamper(buf *b, const uint8_t *g, size_t glen, size_t off,
                   bool xor)
{
  bool changed = false;
  if (off > b->len) off = b->len;
  if (xor) {
    for (size_t i = 0; i < glen && off + i < b->len; i++) {
      b->data[off + i] ^= (char)g[i];
      changed |= g[i] != 0;
    }
    return changed;
  }
  if (!buf_reserve(b, glen)) abort();
  memmove(b->data + off + glen, b->data + off, b->len - off);
  if (glen) memcpy(b->data + off, g, glen);
  b->len += glen;
  return glen > 0;
}

/* What the client sends once the handshake is done, in two writes (the
 * client's flights 2 and 3). */
static const char text[] = "<13>1 2026-05-19T10:00:00Z host app - - - hello\n"
                           "<14>1 2026-05-19T10:00:01Z host app - - - again";
#define HALF 49

static void handshake_run(uint8_t op, uint8_t flight, uint8_t off,
                          uint32_t rng, const uint8_t *g, size_t glen)
{
  sink srv = {tls_session_new(server), {0}};
  sink cli = {tls_client_session_new(client, "localhost"), {0}};
  buf to_srv = {0}, to_cli = {0};
  char err[512];
  bool server_side = !(op & 4), xor = op & 8, changed = false;
  unsigned want = flight % 4, c_flight = 0, s_flight = 0, written = 0;
  if (!srv.t || !cli.t) abort();
  if (tls_session_start(cli.t, &to_srv, err, sizeof err) != 0) abort();

  /* Flights go back and forth until neither side has anything to send or
   * one fails. */
  for (int round = 0; round < 16; round++) {
    if (!to_srv.len && tls_session_ready(cli.t) && written < 2) {
      size_t from = written ? HALF : 0;
      size_t n = written ? sizeof text - 1 - HALF : HALF;
      if (tls_session_write(cli.t, text + from, n, &to_srv, err,
                            sizeof err) != 0)
        abort(); /* nothing was tampered on the client's side yet */
      written++;
    }
    if (!to_srv.len && !to_cli.len) break;
    if (to_srv.len) {
      if (server_side && c_flight == want)
        changed |= tamper(&to_srv, g, glen, off, xor);
      c_flight++;
      buf in = to_srv;
      to_srv = (buf){0};
      int rc = feed(&srv, (uint8_t *)in.data, in.len, &rng, &to_cli);
      buf_free(&in);
      if (rc != 0) break;
    }
    if (to_cli.len) {
      if (!server_side && s_flight == want)
        changed |= tamper(&to_cli, g, glen, off, xor);
      s_flight++;
      buf in = to_cli;
      to_cli = (buf){0};
      int rc = feed(&cli, (uint8_t *)in.data, in.len, &rng, &to_srv);
      buf_free(&in);
      if (rc != 0) break;
    }
  }
  /* Records are authenticated: never bytes the client did not send. */
  if (srv.plain.len > sizeof text - 1 ||
      (srv.plain.len && memcmp(srv.plain.data, text, srv.plain.len) != 0)) {
    fprintf(stderr, "the server handed on bytes the client did not send\n");
    abort();
  }
  if (!changed && srv.plain.len != sizeof text - 1) {
    fprintf(stderr, "untampered session: %zu of %zu bytes handed on\n",
            srv.plain.len, sizeof text - 1);
    abort();
  }
  if (cli.plain.len) abort(); /* the server never writes */
  tls_session_free(srv.t);
  tls_session_free(cli.t);
  buf_free(&srv.plain);
  buf_free(&cli.plain);
  buf_free(&to_srv);
  buf_free(&to_cli);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!server) setup();
  if (size < 4) return 0;
  uint8_t op = data[0], flight = data[1], off = data[2];
  uint32_t rng = data[3];
  const uint8_t *g = data + 4;
  size_t glen = size - 4;

  if (op % 3 == 2) {
    handshake_run(op, flight, off, rng, g, glen);
    return 0;
  }
  sink s = {op % 3 == 0 ? tls_session_new(server)
                        : tls_client_session_new(client, "localhost"),
            {0}};
  buf out = {0};
  char err[512];
  if (!s.t) abort();
  if (op % 3 == 1 && tls_session_start(s.t, &out, err, sizeof err) != 0)
    abort();
  if (glen) feed(&s, g, glen, &rng, &out);
  /* Random bytes cannot finish a handshake (they would need the key). */
  if (s.plain.len || tls_session_ready(s.t)) {
    fprintf(stderr, "random bytes completed a handshake\n");
    abort();
  }
  tls_session_free(s.t);
  buf_free(&s.plain);
  buf_free(&out);
  return 0;
}
