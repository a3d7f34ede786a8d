/*
 * data_dir.c - data_dir.h's two folders, looked up once.
 *
 * CMake defines LUMBERJIT_DATA_FROM_BIN, the install tree's data folder
 * relative to its bin folder ("../share/lumberjit"), LUMBERJIT_SOURCE_DIR,
 * the source tree, and LUMBERJIT_BUILT_MODULES_DIR, the modules the build
 * makes (LPeg's re.lua, patched). A symlink to the binary counts as the binary:
 * /proc/self/exe names its target.
 */
#define _XOPEN_SOURCE 700 /* realpath() is an XSI function */
#include "data_dir.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char sandbox_dir[PATH_MAX];
static char modules_dir[PATH_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int is_dir(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The install tree's data folder into out, without "..", or "" when there
 * is none. */
static void installed_data_dir(char *out, size_t size)
{
  char exe[PATH_MAX], data[PATH_MAX], real[PATH_MAX], sandbox[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *slash;
  int len;

  out[0] = '\0';
  if (n <= 0) return;
  exe[n] = '\0';
  slash = strrchr(exe, '/');
  if (!slash) return;
  *slash = '\0';
  len = snprintf(data, sizeof data, "%s/%s", exe, LUMBERJIT_DATA_FROM_BIN);
  if (len < 0 || (size_t)len >= sizeof data || !realpath(data, real)) return;
  len = snprintf(sandbox, sizeof sandbox, "%s/sandbox", real);
  if (len < 0 || (size_t)len >= sizeof sandbox || !is_dir(sandbox)) return;
  if ((size_t)snprintf(out, size, "%s", real) >= size) out[0] = '\0';
}

static void find_dirs(void)
{
  char data[PATH_MAX - 16];

  installed_data_dir(data, sizeof data);
  if (data[0]) {
    snprintf(sandbox_dir, sizeof sandbox_dir, "%s/sandbox", data);
    snprintf(modules_dir, sizeof modules_dir, "%s/lua_modules", data);
  } else {
    snprintf(sandbox_dir, sizeof sandbox_dir, "%s/sandbox", LUMBERJIT_SOURCE_DIR);
    snprintf(modules_dir, sizeof modules_dir, "%s/lua_modules;%s",
             LUMBERJIT_SOURCE_DIR, LUMBERJIT_BUILT_MODULES_DIR);
  }
}

const char *data_dir_sandbox(void)
{
  pthread_once(&once, find_dirs);
  return sandbox_dir;
}

const char *data_dir_modules(void)
{
  pthread_once(&once, find_dirs);
  return modules_dir;
}
