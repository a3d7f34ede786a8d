/*
 * lib_load.h - a shared library loaded on first use, its functions looked
 * up by name: OpenSSL for TLS (openssl_api.h) and librdkafka for Kafka
 * (kafka_api.h), which a collector that needs neither never maps (their
 * pages are a large share of an idle collector's RSS).
 */
#ifndef LUMBERJIT_LIB_LOAD_H
#define LUMBERJIT_LIB_LOAD_H

#include <stddef.h>

/* Loads soname (RTLD_NOW, RTLD_LOCAL) and sets *slots[i] to the function
 * names[i], for i < n; 0, or -1 with the reason in err, naming the Debian
 * package that has the library. */
int lib_load(const char *soname, const char *package,
             const char *const *names, void **const *slots, size_t n,
             char *err, size_t errlen);

#endif
