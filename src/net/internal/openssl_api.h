/*
 * openssl_api.h - OpenSSL, loaded when a TLS listener or sender is first
 * made (tls.h), as librdkafka is for a kafka_output (kafka_api.h).
 *
 * Why not linked: libssl and libcrypto map about 1.7 MB of pages into
 * every lumberjit at start (their relocations alone touch them), a fifth
 * of an idle collector's RSS, TLS or not; an edge box's budget cannot
 * spare that. So the functions tls.c uses are looked up by name, once
 * (lib_load.h), and called through `ossl`: ossl.SSL_read(ssl, buf, n). The
 * headers still give every type and constant; their macros that stand for
 * a function (SSL_CTX_set_min_proto_version: SSL_CTX_ctrl) are written
 * out at the call, since the macro would name the symbol itself.
 */
#ifndef LUMBERJIT_OPENSSL_API_H
#define LUMBERJIT_OPENSSL_API_H

#include <stddef.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define OPENSSL_API(X)                                                        \
  X(ERR_clear_error) X(ERR_get_error) X(ERR_error_string_n)                   \
  X(TLS_server_method) X(TLS_client_method) X(SSL_CTX_new) X(SSL_CTX_free)    \
  X(SSL_CTX_ctrl) X(SSL_CTX_use_certificate_chain_file)                       \
  X(SSL_CTX_use_PrivateKey_file) X(SSL_CTX_check_private_key)                 \
  X(SSL_CTX_load_verify_locations) X(SSL_CTX_set_default_verify_paths)        \
  X(SSL_CTX_set_verify) X(SSL_new) X(SSL_free) X(SSL_ctrl) X(SSL_set_bio)     \
  X(SSL_set_accept_state) X(SSL_set_connect_state) X(SSL_is_init_finished)    \
  X(SSL_read) X(SSL_write) X(SSL_get_error) X(SSL_do_handshake)               \
  X(SSL_get0_param) X(SSL_set1_host) X(X509_VERIFY_PARAM_set1_ip_asc)         \
  X(BIO_new) X(BIO_free) X(BIO_s_mem) X(BIO_read) X(BIO_write)                \
  X(BIO_ctrl_pending)

#define OPENSSL_API_MEMBER(f) __typeof__(f) *f;
typedef struct {
  OPENSSL_API(OPENSSL_API_MEMBER)
} openssl_api;
#undef OPENSSL_API_MEMBER

extern openssl_api ossl;

/* Loads libssl (once); -1 with the reason when it cannot. */
int openssl_api_load(char *err, size_t errlen);

#endif
