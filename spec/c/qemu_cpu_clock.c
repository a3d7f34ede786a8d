/*
 * qemu_cpu_clock.c - preloaded into the test binaries of a cross build that
 * run under qemu-user (the qemu/ wrappers CMakeLists.txt writes): CPU-time
 * clocks read with clock_gettime advance QEMU_CPU_CLOCK_DIVISOR (default
 * 10) times slower than the emulator's own CPU time.
 *
 * qemu runs arm64 code 10 to 20 times slower than the hardware does (the
 * LuaJIT interpreter, its compiled loops and allocation, measured on the
 * 2-core build machine), and the sandbox's CPU limits are meant for
 * hardware: without this the bundled decoders' top levels, which load
 * within 100 ms of CPU as any call must, break the limit under qemu, and
 * every spec whose limit is sized for a real machine fails for the
 * emulator's sake. Scaled, a limit still stops a runaway call, after the
 * CPU time the hardware would take. Only the sandbox reads these clocks
 * (its calls and its watchdog); getrusage, and so the run's CPU figures,
 * stay the emulator's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static uint64_t divisor = 10;
/* At the first call, not in a constructor: another library's constructor
 * may read a clock before this one's would have run. */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
  const char *env = getenv("QEMU_CPU_CLOCK_DIVISOR");

  real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  if (env && atoi(env) > 0) divisor = (uint64_t)atoi(env);
}

/* The process's and the thread's clocks, and those clock_getcpuclockid and
 * pthread_getcpuclockid return (negative ids). */
static int is_cpu_clock(clockid_t id)
{
  return id < 0 || id == CLOCK_PROCESS_CPUTIME_ID || id == CLOCK_THREAD_CPUTIME_ID;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
  int rc;
  uint64_t ns;

  pthread_once(&once, init);
  rc = real_clock_gettime(id, ts);
  if (rc != 0 || !is_cpu_clock(id)) return rc;
  ns = ((uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec) / divisor;
  ts->tv_sec = (time_t)(ns / 1000000000u);
  ts->tv_nsec = (long)(ns % 1000000000u);
  return 0;
}
