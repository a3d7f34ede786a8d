/*
 * thread_name.h - names the calling thread, so that `top -H`, `ps -L`,
 * perf and /proc/PID/task/TID/comm tell the loop, the workers and the
 * watchdog apart (librdkafka names its own, "rdk:broker1" and so on).
 * Linux keeps 15 bytes of it; elsewhere this does nothing.
 */
#ifndef LUMBERJIT_THREAD_NAME_H
#define LUMBERJIT_THREAD_NAME_H

#ifdef __linux__
#include <sys/prctl.h>

static inline void thread_name_set(const char *name)
{
  prctl(PR_SET_NAME, name, 0, 0, 0);
}
#else
static inline void thread_name_set(const char *name) { (void)name; }
#endif

#endif
