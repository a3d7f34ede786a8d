/*
 * fd_limit.c - raising RLIMIT_NOFILE and the inputs' share of it.
 */
#include "fd_limit.h"

#include <dirent.h>
#include <errno.h>
#include <sys/resource.h>
#include <time.h>

uint64_t fd_limit_raise(void)
{
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    struct rlimit want = {rl.rlim_max, rl.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl.rlim_cur = rl.rlim_max;
  }
  return (uint64_t)rl.rlim_cur;
}

uint64_t fd_limit_current(void)
{
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

uint64_t fd_limit_ceiling(void)
{
  uint64_t limit = fd_limit_current();

  return limit > FD_LIMIT_RESERVED ? limit - FD_LIMIT_RESERVED : 0;
}

/* Descriptors open now, counted in /proc/self/fd (the directory's own
 * descriptor left out); 0 where there is no /proc. */
static uint64_t fds_open(void)
{
  DIR *d = opendir("/proc/self/fd");
  uint64_t n = 0;

  if (!d) return 0;
  while (readdir(d)) n++;
  closedir(d);
  return n > 3 ? n - 3 : 0; /* ".", ".." and d's own */
}

/* Counting reads all of /proc/self/fd: 1000 tail_inputs scanning each
 * second counted it 1000 times a second, a third of their CPU. */
static uint64_t count, counted_ms;
static bool counted;

void fd_limit_opened(void)
{
  count++;
}

static uint64_t fds_open_lately(void)
{
  struct timespec ts;
  uint64_t now;

  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
  if (!counted || now - counted_ms >= FD_COUNT_TTL_MS) {
    count = fds_open();
    counted_ms = now;
    counted = true;
  }
  return count;
}

uint64_t fd_limit_budget(void)
{
  uint64_t ceiling = fd_limit_ceiling(), open_now = fds_open_lately();

  return ceiling > open_now ? ceiling - open_now : 0;
}

bool fd_limit_exhausted(int err)
{
  if (err < 0) err = -err; /* libuv's errors are negated errnos on Unix */
  return err == EMFILE || err == ENFILE;
}
