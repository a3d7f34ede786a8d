/* openssl_api.c - see openssl_api.h. */
#include "openssl_api.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>

/* OpenSSL 3's ABI, as Debian 12's libssl3 has it; libssl brings libcrypto. */
#define LIBSSL "libssl.so.3"

openssl_api ossl;
static bool loaded;

int openssl_api_load(char *err, size_t errlen)
{
  void *lib;

  if (loaded) return 0;
  if (!(lib = dlopen(LIBSSL, RTLD_NOW | RTLD_LOCAL))) {
    snprintf(err, errlen, "cannot load %s (Debian's libssl3): %s", LIBSSL,
             dlerror());
    return -1;
  }
  /* dlsym gives an object pointer; POSIX lets it hold a function's. */
#define OPENSSL_API_LOOKUP(f)                                               \
  if (!(*(void **)&ossl.f = dlsym(lib, #f))) {                              \
    snprintf(err, errlen, "%s has no %s", LIBSSL, #f);                      \
    return -1;                                                              \
  }
  OPENSSL_API(OPENSSL_API_LOOKUP)
#undef OPENSSL_API_LOOKUP
  loaded = true;
  return 0;
}
