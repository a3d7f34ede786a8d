/*
 * sandbox_watchdog.c - one thread that watches every sandbox's calls.
 *
 * Each tick it looks at every registered sandbox. A call seen for the first
 * time has its owner thread's CPU clock noted; a call still running at the
 * next tick has run for at least one interval. Once the CPU it used since
 * the first sighting passes cpu_limit_ms, the watchdog arms the hook to fire
 * at the next instruction and stop the call. A plugin with an
 * instruction_limit has the hook armed at the second sighting, to count its
 * instructions from then on. The owning threads never wait for the
 * watchdog; it takes a sandbox's hook_lock only to arm the hook.
 *
 * Idle, it sleeps: a tick that finds no sandbox in a batch, timer_event or
 * load (sandbox_watchdog_enter) announces its sleep, looks once more, and
 * waits without a timeout until the next sandbox_watchdog_enter wakes it.
 * The announcement and the sandbox's `active` are sequentially consistent
 * both ways, so either the second look sees the sandbox, or the sandbox
 * sees the sleep and wakes it: a collector with nothing to read does not
 * wake every watchdog_interval_ms. Only the first batch after a sleep pays
 * for a lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox_internal.h"
#include "thread_name.h"

struct sandbox_watchdog {
  pthread_t thread;
  pthread_mutex_t lock; /* guards list and stop */
  pthread_cond_t wake;
  bool stop;
  atomic_bool sleeping;
  sandbox *list;
  unsigned interval_ms;
};

static uint64_t thread_cpu_ns(clockid_t clock)
{
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void arm(sandbox *sb, uint64_t seq, int count)
{
  pthread_mutex_lock(&sb->hook_lock);
  if (sb->L && atomic_load(&sb->in_call) && atomic_load(&sb->call_seq) == seq) {
    lua_sethook(sb->L, sandbox_hook, LUA_MASKCOUNT, count);
    atomic_store(&sb->armed_seq, seq);
    atomic_store(&sb->hook_armed, true);
  }
  pthread_mutex_unlock(&sb->hook_lock);
}

static void watch(sandbox *sb)
{
  uint64_t seq, used;

  if (!atomic_load_explicit(&sb->in_call, memory_order_acquire)) {
    sb->wd_seen_seq = 0;
    return;
  }
  seq = atomic_load_explicit(&sb->call_seq, memory_order_relaxed);
  if (seq != sb->wd_seen_seq) {
    sb->wd_seen_seq = seq;
    sb->wd_cpu_start = thread_cpu_ns(sb->owner_clock);
    return;
  }
  used = thread_cpu_ns(sb->owner_clock) - sb->wd_cpu_start;
  atomic_store(&sb->cpu_used_ns, used);
  if (sb->limits.cpu_limit_ms &&
      used >= sb->limits.cpu_limit_ms * 1000000u) {
    /* Stop now: the hook fires at the next instruction. */
    atomic_store_explicit(&sb->stop_seq, seq, memory_order_release);
    arm(sb, seq, 1);
  } else if (sb->limits.instruction_limit &&
             (!atomic_load_explicit(&sb->hook_armed, memory_order_relaxed) ||
              atomic_load_explicit(&sb->armed_seq, memory_order_relaxed) != seq)) {
    arm(sb, seq, SANDBOX_HOOK_STEP);  /* start counting instructions */
  }
}

/* Whether a sandbox is in a batch, timer_event or load. Under wd->lock. */
static bool any_active(sandbox_watchdog *wd)
{
  for (sandbox *sb = wd->list; sb; sb = sb->wd_next)
    if (atomic_load(&sb->active)) return true;
  return false;
}

/* Sleeps while no sandbox is active (see the top). Under wd->lock. */
static void sleep_while_idle(sandbox_watchdog *wd, struct timespec *next)
{
  if (any_active(wd)) return;
  atomic_store(&wd->sleeping, true);
  while (!wd->stop && !any_active(wd)) pthread_cond_wait(&wd->wake, &wd->lock);
  atomic_store(&wd->sleeping, false);
  clock_gettime(CLOCK_MONOTONIC, next);
}

void sandbox_watchdog_enter(sandbox *sb)
{
  sandbox_watchdog *wd = sb->wd;

  if (sb->active_depth++ > 0) return;
  atomic_store(&sb->active, true);
  if (wd && atomic_load(&wd->sleeping)) {
    pthread_mutex_lock(&wd->lock);
    pthread_cond_signal(&wd->wake);
    pthread_mutex_unlock(&wd->lock);
  }
}

void sandbox_watchdog_leave(sandbox *sb)
{
  if (--sb->active_depth == 0)
    atomic_store_explicit(&sb->active, false, memory_order_release);
}

static void *watchdog_main(void *arg)
{
  sandbox_watchdog *wd = arg;
  struct timespec next;

  thread_name_set("lj:watchdog");
  clock_gettime(CLOCK_MONOTONIC, &next);
  pthread_mutex_lock(&wd->lock);
  while (!wd->stop) {
    sleep_while_idle(wd, &next);
    next.tv_nsec += (long)wd->interval_ms * 1000000L;
    while (next.tv_nsec >= 1000000000L) {
      next.tv_nsec -= 1000000000L;
      next.tv_sec++;
    }
    while (!wd->stop &&
           pthread_cond_timedwait(&wd->wake, &wd->lock, &next) != ETIMEDOUT)
      ;
    for (sandbox *sb = wd->list; sb && !wd->stop; sb = sb->wd_next) watch(sb);
  }
  pthread_mutex_unlock(&wd->lock);
  return NULL;
}

sandbox_watchdog *sandbox_watchdog_start(unsigned interval_ms, char *err,
                                         size_t errlen)
{
  sandbox_watchdog *wd = calloc(1, sizeof *wd);
  pthread_condattr_t attr;
  int rc;

  if (!wd) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (interval_ms < 1) interval_ms = 1;
  if (interval_ms > 1000) interval_ms = 1000;
  wd->interval_ms = interval_ms;
  pthread_mutex_init(&wd->lock, NULL);
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&wd->wake, &attr);
  pthread_condattr_destroy(&attr);
  rc = pthread_create(&wd->thread, NULL, watchdog_main, wd);
  if (rc != 0) {
    snprintf(err, errlen, "cannot start the watchdog thread: %s", strerror(rc));
    pthread_cond_destroy(&wd->wake);
    pthread_mutex_destroy(&wd->lock);
    free(wd);
    return NULL;
  }
  return wd;
}

void sandbox_watchdog_stop(sandbox_watchdog *wd)
{
  if (!wd) return;
  pthread_mutex_lock(&wd->lock);
  wd->stop = true;
  pthread_cond_signal(&wd->wake);
  pthread_mutex_unlock(&wd->lock);
  pthread_join(wd->thread, NULL);
  pthread_cond_destroy(&wd->wake);
  pthread_mutex_destroy(&wd->lock);
  free(wd);
}

void sandbox_watchdog_add(sandbox_watchdog *wd, sandbox *sb)
{
  pthread_mutex_lock(&wd->lock);
  sb->wd_next = wd->list;
  wd->list = sb;
  pthread_mutex_unlock(&wd->lock);
}

void sandbox_watchdog_remove(sandbox_watchdog *wd, sandbox *sb)
{
  pthread_mutex_lock(&wd->lock);
  for (sandbox **p = &wd->list; *p; p = &(*p)->wd_next)
    if (*p == sb) {
      *p = sb->wd_next;
      break;
    }
  pthread_mutex_unlock(&wd->lock);
}
