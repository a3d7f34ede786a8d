/* openssl_api.c - see openssl_api.h. */
#include "openssl_api.h"

#include <stdbool.h>

#include "lib_load.h"

openssl_api ossl;

#define OPENSSL_API_NAME(f) #f,
#define OPENSSL_API_SLOT(f) (void **)&ossl.f,
static const char *const names[] = {OPENSSL_API(OPENSSL_API_NAME)};
static void **const slots[] = {OPENSSL_API(OPENSSL_API_SLOT)};

int openssl_api_load(char *err, size_t errlen)
{
  static bool loaded;

  /* OpenSSL 3's ABI, as Debian 12's libssl3 has it; libssl brings
   * libcrypto. */
  if (!loaded && lib_load("libssl.so.3", "libssl3", names, slots,
                          sizeof names / sizeof *names, err, errlen) != 0)
    return -1;
  loaded = true;
  return 0;
}
