/* kafka_api.c - see kafka_api.h. */
#include "kafka_api.h"

#include <stdbool.h>

#include "lib_load.h"

kafka_api rdk;

#define KAFKA_API_NAME(f) #f,
#define KAFKA_API_SLOT(f) (void **)&rdk.f,
static const char *const names[] = {KAFKA_API(KAFKA_API_NAME)};
static void **const slots[] = {KAFKA_API(KAFKA_API_SLOT)};

int kafka_api_load(char *err, size_t errlen)
{
  static bool loaded;

  if (!loaded && lib_load("librdkafka.so.1", "librdkafka1", names, slots,
                          sizeof names / sizeof *names, err, errlen) != 0)
    return -1;
  loaded = true;
  return 0;
}
