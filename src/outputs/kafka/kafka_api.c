/* kafka_api.c - see kafka_api.h. */
#include "kafka_api.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>

#define LIBRDKAFKA "librdkafka.so.1"

kafka_api rdk;
static bool loaded;

int kafka_api_load(char *err, size_t errlen)
{
  void *lib;

  if (loaded) return 0;
  if (!(lib = dlopen(LIBRDKAFKA, RTLD_NOW | RTLD_LOCAL))) {
    snprintf(err, errlen, "cannot load %s (Debian's librdkafka1): %s",
             LIBRDKAFKA, dlerror());
    return -1;
  }
  /* dlsym gives an object pointer; POSIX lets it hold a function's. */
#define KAFKA_API_LOOKUP(f)                                                 \
  if (!(*(void **)&rdk.f = dlsym(lib, #f))) {                               \
    snprintf(err, errlen, "%s has no %s", LIBRDKAFKA, #f);                  \
    return -1;                                                              \
  }
  KAFKA_API(KAFKA_API_LOOKUP)
#undef KAFKA_API_LOOKUP
  loaded = true;
  return 0;
}
