/* version.c - see version.h. */
#include "version.h"

#include <librdkafka/rdkafka.h>
#include <luajit.h>
#include <openssl/opensslv.h>
#include <uv.h>
#include <zlib.h>

#ifndef LUMBERJIT_BUILD_TYPE
#define LUMBERJIT_BUILD_TYPE "unknown"
#endif

void version_print(FILE *f)
{
  fprintf(f, "lumberjit %s (%s build%s)\n", LUMBERJIT_VERSION,
          LUMBERJIT_BUILD_TYPE,
#if defined(__SANITIZE_ADDRESS__)
          ", AddressSanitizer and UBSan"
#else
          ""
#endif
  );
  /* LuaJIT is linked in, built with the check hook (README: Sandbox
   * limits); libuv and zlib are the shared libraries loaded now; OpenSSL
   * and librdkafka are loaded only when TLS or a kafka_output is
   * configured, so the version of their headers is what there is to say. */
  fprintf(f, "%s (LUAJIT_ENABLE_CHECKHOOK), libuv %s, zlib %s, %s (headers; "
          "loaded for TLS), librdkafka %d.%d.%d (headers; loaded for "
          "kafka_output)\n",
          LUAJIT_VERSION, uv_version_string(), zlibVersion(),
          OPENSSL_VERSION_TEXT,
          RD_KAFKA_VERSION >> 24 & 0xff, RD_KAFKA_VERSION >> 16 & 0xff,
          RD_KAFKA_VERSION >> 8 & 0xff);
}
