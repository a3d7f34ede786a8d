/* metrics_process.c - the process's families, named as Prometheus's client
 * libraries name theirs (process_*), under lumberjit_. They are read at
 * each formatting, on the loop thread: a few small reads of /proc. */
#include "metrics_internal.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Resident pages: the second figure of /proc/self/statm. */
static bool resident_bytes(double *v)
{
  unsigned long long size, resident;
  FILE *f = fopen("/proc/self/statm", "re");
  bool ok = f && fscanf(f, "%llu %llu", &size, &resident) == 2;

  if (f) fclose(f);
  if (ok) *v = (double)resident * (double)sysconf(_SC_PAGESIZE);
  return ok;
}

static bool cpu_seconds(double *v)
{
  struct rusage ru;

  if (getrusage(RUSAGE_SELF, &ru) != 0) return false;
  *v = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return true;
}

/* Entries of /proc/self/fd, less the one reading it. */
static bool open_fds(double *v)
{
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  double n = 0;

  if (!d) return false;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  *v = n - 1;
  return true;
}

static bool max_fds(double *v)
{
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
  *v = rl.rlim_cur == RLIM_INFINITY ? (double)UINT64_MAX : (double)rl.rlim_cur;
  return true;
}

/* The boot time (btime of /proc/stat) plus the process's start in clock
 * ticks after it (the 22nd field of /proc/self/stat, counted after the
 * command's closing parenthesis, which may itself hold spaces). */
static bool start_time(double *v)
{
  char line[1024], *p;
  unsigned long long btime = 0, start = 0;
  bool have_btime = false, ok;
  FILE *f = fopen("/proc/stat", "re");

  while (f && !have_btime && fgets(line, sizeof line, f))
    have_btime = sscanf(line, "btime %llu", &btime) == 1;
  if (f) fclose(f);
  f = fopen("/proc/self/stat", "re");
  ok = f && fgets(line, sizeof line, f) && (p = strrchr(line, ')'));
  if (f) fclose(f);
  if (!ok || !have_btime) return false;
  /* After ")": the state is field 3, so the start is the 20th token. */
  p++;
  for (int field = 3; field <= 22 && p; field++) {
    p += strspn(p, " ");
    if (field == 22) ok = sscanf(p, "%llu", &start) == 1;
    p = strchr(p, ' ');
  }
  if (!ok || !p) return false;
  *v = (double)btime + (double)start / (double)sysconf(_SC_CLK_TCK);
  return true;
}

/* Reloads, as metrics_note_reload hears them; the last success is the
 * start until a reload succeeds. */
static uint64_t reloads[2]; /* [ok] */
static bool last_reload_failed;
static double last_success;

void metrics_note_reload(bool ok)
{
  struct timespec now;

  reloads[ok]++;
  last_reload_failed = !ok;
  if (ok && clock_gettime(CLOCK_REALTIME, &now) == 0)
    last_success = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static bool last_reload_successful(double *v)
{
  *v = last_reload_failed ? 0 : 1;
  return true;
}

static bool last_reload_time(double *v)
{
  if (last_success == 0 && !start_time(&last_success)) return false;
  *v = last_success;
  return true;
}

static const struct {
  const char *name, *type, *help;
  bool (*read)(double *v);
} families[] = {
  {"lumberjit_process_resident_memory_bytes", "gauge",
   "Resident memory size in bytes.", resident_bytes},
  {"lumberjit_process_cpu_seconds_total", "counter",
   "User and system CPU time spent in seconds.", cpu_seconds},
  {"lumberjit_process_open_fds", "gauge",
   "Number of open file descriptors.", open_fds},
  {"lumberjit_process_max_fds", "gauge",
   "Maximum number of open file descriptors (the soft limit).", max_fds},
  {"lumberjit_process_start_time_seconds", "gauge",
   "Start time of the process since the Unix epoch in seconds.", start_time},
  {"lumberjit_config_last_reload_successful", "gauge",
   "Whether the last configuration reload succeeded (1 until one fails).",
   last_reload_successful},
  {"lumberjit_config_last_reload_success_timestamp_seconds", "gauge",
   "When the configuration running was loaded, since the Unix epoch.",
   last_reload_time},
};

bool metrics_process(buf *b)
{
  bool ok = true;

  for (size_t i = 0; ok && i < sizeof families / sizeof *families; i++) {
    double v;
    if (!families[i].read(&v)) continue;
    ok = metrics_head(b, families[i].name, families[i].type, families[i].help) &&
         buf_appendf(b, "%s %.15g\n", families[i].name, v);
  }
  ok = ok && metrics_head(b, "lumberjit_config_reloads_total", "counter",
                          "Configuration reloads tried, by result.");
  for (int r = 1; ok && r >= 0; r--)
    ok = buf_append_str(b, "lumberjit_config_reloads_total") &&
         metrics_label(b, "result", r ? "success" : "failure", true) &&
         buf_appendf(b, "} %" PRIu64 "\n", reloads[r]);
  return ok &&
         metrics_head(b, "lumberjit_build_info", "gauge",
                      "Always 1; its labels say which build runs.") &&
         buf_append_str(b, "lumberjit_build_info") &&
         metrics_label(b, "version", LUMBERJIT_VERSION, true) &&
         buf_append_str(b, "} 1\n");
}
