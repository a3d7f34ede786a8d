/*
 * fuzz_config_keys.c - the config loader (src/config: evaluating the file,
 * then every plugin table's keys read by its type's key readers, with the
 * registry's types) on random Lua-ish configuration text.
 *
 * Input: a configuration file's text. When it holds a NUL byte, what is
 * before the first one is a.lua and what is after is b.lua, both in one
 * directory that is loaded as one configuration (config.h: a global each
 * file defines once). Files live in a temporary directory the target
 * removes at exit. Plugin files (decoders/NAME.lua) resolve against the
 * shipped sandbox/ as usual, and paths plugins name are only checked, never
 * created.
 *
 * config_load must return a config (freed again) or -1 with a reason; the
 * loader's own instruction and memory caps bound each evaluation.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], one[96], confdir[96], a[128], b[128];

static void remove_dir(void)
{
  unlink(one);
  unlink(a);
  unlink(b);
  rmdir(confdir);
  rmdir(dir);
}

static void put(const char *path, const uint8_t *bytes, size_t len)
{
  FILE *f = fopen(path, "wb");
  if (!f || (len && fwrite(bytes, 1, len, f) != len)) abort();
  fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "%s/lj-fuzz-config-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir)) abort();
    atexit(remove_dir);
    snprintf(one, sizeof one, "%s/lumberjit.lua", dir);
    snprintf(confdir, sizeof confdir, "%s/conf.d", dir);
    snprintf(a, sizeof a, "%s/a.lua", confdir);
    snprintf(b, sizeof b, "%s/b.lua", confdir);
    if (mkdir(confdir, 0700) != 0) abort();
  }
  const uint8_t *nul = memchr(data, 0, size);
  const char *path = one;
  if (nul) {
    put(a, data, (size_t)(nul - data));
    put(b, nul + 1, size - (size_t)(nul - data) - 1);
    path = confdir;
  } else {
    put(one, data, size);
  }

  config cfg;
  char err[1024] = "";
  if (config_load(path, registry_types, &cfg, err, sizeof err) == 0) {
    config_free(&cfg);
  } else if (!err[0]) {
    fprintf(stderr, "config_load failed without a reason\n");
    abort();
  }
  return 0;
}
