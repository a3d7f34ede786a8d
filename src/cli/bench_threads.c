/*
 * bench_threads.c - CPU time by thread and peak RSS, for lumberjit bench
 * (bench.h), from /proc/self.
 *
 * A thread's kind is its name (thread_name.h: lj:worker1, rdk:broker1, the
 * main thread's is the program's); its CPU time is user + system from
 * /proc/self/task/TID/stat, in clock ticks. A step takes the difference of
 * two readings, both while every thread it measures is up: a thread that
 * ended between them would take its time with it (the pipeline's probe
 * calls `drained` before the workers stop for this).
 *
 * The peak RSS is the kernel's high-water mark (VmHWM), which writing 5
 * to /proc/self/clear_refs resets, so each step has its own.
 */
#include "bench.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const bench_thread_names[BENCH_THREAD_KINDS] = {
  "loop", "workers", "kafka", "other", "writers"};

static bench_thread_kind kind_of(long tid, const char *name)
{
  if (tid == (long)getpid()) return BENCH_LOOP;
  if (strncmp(name, "lj:worker", 9) == 0) return BENCH_WORKERS;
  if (strncmp(name, "lj:writer", 9) == 0) return BENCH_WRITERS;
  if (strncmp(name, "rdk:", 4) == 0) return BENCH_KAFKA;
  return BENCH_OTHER;
}

/* Adds thread tid's CPU seconds to cpu[its kind]. stat's second field is
 * the name in parentheses, which may hold spaces and parentheses: the
 * fields after it count from the last ')'. */
static void add_thread(long tid, double cpu[BENCH_THREAD_KINDS], double tick)
{
  char path[64], line[1024], name[32] = "";
  unsigned long utime, stime;
  const char *open, *close;
  FILE *f;

  snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
  if (!(f = fopen(path, "r"))) return; /* it ended meanwhile */
  if (!fgets(line, sizeof line, f)) line[0] = '\0';
  fclose(f);
  open = strchr(line, '(');
  close = strrchr(line, ')');
  if (!open || !close || close < open) return;
  snprintf(name, sizeof name, "%.*s", (int)(close - open - 1), open + 1);
  /* After ") ": state, ppid, pgrp, session, tty_nr, tpgid, flags, minflt,
   * cminflt, majflt, cmajflt, utime, stime (fields 3 to 15). */
  if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
             &utime, &stime) != 2)
    return;
  cpu[kind_of(tid, name)] += (double)(utime + stime) / tick;
}

void bench_thread_cpu(double cpu[BENCH_THREAD_KINDS])
{
  double tick = (double)sysconf(_SC_CLK_TCK);
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;

  for (int k = 0; k < BENCH_THREAD_KINDS; k++) cpu[k] = 0;
  if (!d) return;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') add_thread(strtol(e->d_name, NULL, 10), cpu, tick);
  closedir(d);
}

void bench_reset_peak_rss(void)
{
  FILE *f = fopen("/proc/self/clear_refs", "w");

  /* Without it (an old kernel), the peak is the process's so far. */
  if (!f) return;
  fputs("5", f);
  fclose(f);
}

double bench_peak_rss_mib(void)
{
  char line[256];
  double kib = 0;
  FILE *f = fopen("/proc/self/status", "r");

  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %lf kB", &kib) == 1) break;
  fclose(f);
  return kib / 1024;
}
