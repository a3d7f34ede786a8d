/*
 * service.c - the collector's run and its reloads (service.h).
 *
 * A reload is asked on the loop, from the pipeline's SIGHUP hook or the
 * watch timer, and decided there: the new configuration is loaded and
 * checked at once (a few ms of the loop), and only a good one stops the
 * running pipeline, whose pipeline_run then returns to service_run's loop,
 * which builds the next pipeline of it.
 */
#include "service.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "http_endpoint.h"
#include "log.h"
#include "metrics.h"
#include "pipeline.h"
#include "registry.h"
#include "systemd_listen.h"
#include "systemd_notify.h"

/* The files watch_config looks at: the configuration's and its plugins'.
 * One block holds them; the last handle to close frees it. */
typedef struct watched {
  uv_fs_poll_t poll;
  struct service *svc;
  struct watched *block;     /* the first, which counts the open ones */
  size_t open;
} watched;

typedef struct service {
  const char *path;          /* the configuration, as given */
  config cfg;                /* the running pipeline's */
  uint64_t digest;           /* pipeline_config_digest of cfg, as loaded */
  config next;               /* a reload's, checked; valid when reloading */
  uint64_t next_digest;
  bool reloading;
  /* A reload asked while one was under way: it follows once the new
   * pipeline runs, so the last change made is the one that runs. */
  const char *again;
  /* A stop signal that came during a reload: the next pipeline stops as
   * soon as it runs (pipeline.h: pipeline_stop_for_reload). */
  const char *stop_after;
  pipeline *pl;
  http_endpoint *http;
  char *http_address;        /* the endpoint's, to see it change */
  watched *watch;            /* watch_config's polls */
  size_t nwatch;
  uv_timer_t settle;         /* a change is reloaded once the files settle */
} service;

static void reload(service *svc, const char *why);

static void on_started(void *ud)
{
  service *svc = ud;

  if (svc->stop_after) {
    const char *why = svc->stop_after;
    svc->stop_after = NULL;
    pipeline_stop_signal(svc->pl, why);
    return;
  }
  systemd_notifyf("READY=1\nSTATUS=running: %zu inputs",
                  pipeline_snapshot(svc->pl)->ninputs);
  if (svc->again) {
    const char *why = svc->again;
    svc->again = NULL;
    reload(svc, why);
  }
}

static void on_stopping(void *ud, const char *why)
{
  service *svc = ud;

  /* A stop wins over a reload asked after the one under way; the one
   * under way goes on, for the stop to end what it hands on. */
  svc->again = NULL;
  if (svc->reloading) svc->stop_after = why ? why : "a stop";
  systemd_notifyf("STOPPING=1\nSTATUS=stopping%s%s", why ? ": " : "",
                  why ? why : "");
}

static void on_reload_signal(void *ud, const char *signame)
{
  reload(ud, signame);
}

/* ---- watch_config ---- */

static void on_settled(uv_timer_t *t)
{
  reload(t->data, "a configuration file changed");
}

/* Editors write a file in steps: the reload waits for a quiet interval. */
static void on_file_changed(uv_fs_poll_t *h, int status,
                            const uv_stat_t *prev, const uv_stat_t *curr)
{
  service *svc = ((watched *)h->data)->svc;

  (void)status, (void)prev, (void)curr;
  uv_timer_start(&svc->settle, on_settled, svc->cfg.watch_interval_ms, 0);
}

static void on_watch_closed(uv_handle_t *h)
{
  watched *block = ((watched *)h->data)->block;

  if (--block->open == 0) free(block);
}

static void unwatch(service *svc)
{
  uv_timer_stop(&svc->settle);
  if (!svc->watch) return;
  svc->watch->open = svc->nwatch;
  for (size_t i = 0; i < svc->nwatch; i++)
    uv_close((uv_handle_t *)&svc->watch[i].poll, on_watch_closed);
  if (svc->nwatch == 0) free(svc->watch);
  svc->watch = NULL;
  svc->nwatch = 0;
}

static void watch_file(service *svc, const char *path)
{
  watched *w = &svc->watch[svc->nwatch];

  w->svc = svc;
  w->block = svc->watch;
  uv_fs_poll_init(uv_default_loop(), &w->poll);
  w->poll.data = w;
  svc->nwatch++;
  if (uv_fs_poll_start(&w->poll, on_file_changed, path,
                       (unsigned)svc->cfg.watch_interval_ms) == 0)
    uv_unref((uv_handle_t *)&w->poll);
}

/* Polls the configuration (a directory too: a file added or removed
 * changes its time) and each plugin's file. */
static void watch(service *svc)
{
  const config *cfg = &svc->cfg;
  size_t n = 1;

  if (!cfg->watch_config) return;
  for (char **s = cfg->sources; s && *s; s++) n++;
  n += cfg->nplugins;
  if (!(svc->watch = calloc(n, sizeof *svc->watch))) {
    log_warning("watch_config: out of memory; reload with SIGHUP instead");
    return;
  }
  watch_file(svc, cfg->file);
  for (char **s = cfg->sources; s && *s; s++)
    if (strcmp(*s, cfg->file) != 0) watch_file(svc, *s);
  for (size_t i = 0; i < cfg->nplugins; i++)
    if (cfg->plugins[i].filename) watch_file(svc, cfg->plugins[i].filename);
}

/* ---- reloads ---- */

/* Why the run of `next` could not pick up where the running one stops;
 * NULL: it can. */
static const char *cannot_resume(const config *next, char *why, size_t len)
{
  for (size_t i = 0; i < next->nplugins; i++) {
    const config_plugin *p = &next->plugins[i];
    if (p->type->flags & PLUGIN_STDIN)
      snprintf(why, len, "%s:%d: input '%s' reads standard input, whose "
               "bytes read ahead would be lost: restart to change it",
               p->file, p->line, p->name);
    else if ((p->type->flags & PLUGIN_RESUMES) && !next->state_dir)
      snprintf(why, len, "%s:%d: input '%s' reads files and there is no "
               "state_dir: the next run could not start where this one "
               "stops", p->file, p->line, p->name);
    else
      continue;
    return why;
  }
  return NULL;
}

static void reload_failed(service *svc, const char *why)
{
  log_error("reload failed; the running configuration stays: %s", why);
  metrics_note_reload(false);
  systemd_notifyf("READY=1\nSTATUS=running; the last reload failed: %s", why);
  /* logrotate's postrotate sends SIGHUP: its files reopen all the same. */
  pipeline_reopen(svc->pl);
}

static void reload(service *svc, const char *why)
{
  char err[2048];

  if (svc->stop_after) {
    log_msg("%s: the run is stopping; not reloading", why);
    return;
  }
  /* One at a time: one asked meanwhile follows it (on_started). */
  if (svc->reloading || !svc->pl) {
    if (!svc->again)
      log_msg("%s: a reload is under way; reloading again once it is done",
              why);
    svc->again = why;
    return;
  }
  uv_timer_stop(&svc->settle);
  log_msg("%s: reloading %s", why, svc->path);
  systemd_notifyf("RELOADING=1\nSTATUS=reloading");
  if (config_load(svc->path, registry_types, &svc->next, err, sizeof err) != 0) {
    reload_failed(svc, err);
    return;
  }
  /* The running config's digest is of its files as they were loaded. */
  svc->next_digest = pipeline_config_digest(&svc->next);
  if (svc->next_digest == svc->digest) {
    log_msg("reload: the configuration is unchanged; reopening the output "
            "files");
    config_free(&svc->next);
    metrics_note_reload(true);
    pipeline_reopen(svc->pl);
    systemd_notify("READY=1\nSTATUS=running");
    return;
  }
  if (cannot_resume(&svc->next, err, sizeof err) ||
      pipeline_check(&svc->next, err, sizeof err) != 0) {
    config_free(&svc->next);
    reload_failed(svc, err);
    return;
  }
  if (!pipeline_stop_for_reload(svc->pl, &svc->next)) {
    log_msg("reload: the run is stopping already; not reloading");
    config_free(&svc->next);
    return;
  }
  /* The files are read: what changes them from here on is the next
   * reload's. The drain may take stop_timeout_ms. */
  log_msg("reload: the new configuration is loaded and checked; the running "
          "pipeline writes what it read, then gives way");
  svc->reloading = true;
}

/* ---- the PID file ---- */

static void write_pid_file(const char *path)
{
  char tmp[4096];
  FILE *f;
  bool ok;

  if (!path) return;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if ((f = fopen(tmp, "we"))) {
    ok = fprintf(f, "%ld\n", (long)getpid()) > 0;
    ok = fclose(f) == 0 && ok && rename(tmp, path) == 0;
  } else {
    ok = false;
  }
  if (!ok) {
    log_warning("pid_file %s: %s; `lumberjit --reload` cannot find this "
                "process", path, strerror(errno));
    unlink(tmp);
  }
}

static void remove_pid_file(const char *path)
{
  if (path) unlink(path);
}

/* The inputs of next that ran in cfg go on (config.h: continues). */
static void mark_continuing(config *next, const config *cfg)
{
  for (size_t i = 0; i < next->nplugins; i++) {
    config_plugin *p = &next->plugins[i];
    const config_plugin *was = config_find(cfg, p->name, PLUGIN_INPUT);
    p->continues = p->role == PLUGIN_INPUT && was && was->type == p->type;
  }
}

/* ---- the run ---- */

/* The endpoint follows http_address: started, moved or stopped. */
static int place_endpoint(service *svc, char *err, size_t errlen)
{
  const char *want = svc->cfg.http_address;

  if (svc->http && want && strcmp(want, svc->http_address) == 0) return 0;
  http_endpoint_close(svc->http);
  svc->http = NULL;
  free(svc->http_address);
  svc->http_address = NULL;
  if (!want) return 0;
  if (!(svc->http = http_endpoint_start(uv_default_loop(), want, err, errlen)))
    return -1;
  svc->http_address = strdup(want);
  return 0;
}

/* Builds the running config's pipeline; after a reload, one that cannot
 * be built gives way to the previous config (prev), which ran. */
static int build(service *svc, config *prev, uint64_t prev_digest)
{
  char err[2048];

  if (place_endpoint(svc, err, sizeof err) == 0 &&
      (svc->pl = pipeline_create(&svc->cfg, uv_default_loop(), err,
                                 sizeof err)))
    return 0;
  if (!prev) {
    fprintf(stderr, "lumberjit: %s\n", err);
    return -1;
  }
  log_error("reload failed; going back to the configuration before: %s", err);
  metrics_note_reload(false);
  config_free(&svc->cfg);
  svc->cfg = *prev;
  svc->digest = prev_digest;
  *prev = (config){0};
  mark_continuing(&svc->cfg, &svc->cfg); /* its inputs ran until now */
  if (place_endpoint(svc, err, sizeof err) == 0 &&
      (svc->pl = pipeline_create(&svc->cfg, uv_default_loop(), err,
                                 sizeof err)))
    return 0;
  log_error("the configuration before cannot run again either: %s", err);
  return -1;
}

int service_run(const char *path, config *cfg)
{
  service svc = {.path = path, .cfg = *cfg,
                 .digest = pipeline_config_digest(cfg)};
  pipeline_hooks hooks = {on_started, on_stopping, on_reload_signal, &svc};
  config prev = {0};
  uint64_t prev_digest = 0;
  int status = 0, rc;
  bool first = true;

  uv_timer_init(uv_default_loop(), &svc.settle);
  svc.settle.data = &svc;
  uv_unref((uv_handle_t *)&svc.settle);
  for (;;) {
    int built = build(&svc, first ? NULL : &prev, prev_digest);
    config_free(&prev);
    if (!first) {
      size_t kept = pipeline_reload_finish();
      systemd_listen_drop_kept(); /* sockets of listeners gone */
      if (built == 0) {
        log_msg("reload: running the new configuration (%zu plugin "
                "instances kept as they were)", kept);
        metrics_note_reload(true);
      }
    }
    if (built != 0) {
      status = 1;
      break;
    }
    if (first) {
      systemd_listen_close_unclaimed();
      if ((rc = systemd_watchdog_start(uv_default_loop())) != 0)
        log_warning("systemd watchdog: %s; no WATCHDOG=1 pings",
                    uv_strerror(rc));
      write_pid_file(svc.cfg.pid_file);
    }
    first = false;
    watch(&svc);
    if (svc.http) http_endpoint_serve(svc.http, svc.pl, svc.cfg.health_paused_ms);
    pipeline_set_hooks(svc.pl, &hooks);
    if (pipeline_run(svc.pl) != 0) status = 1;
    if (svc.http) http_endpoint_serve(svc.http, NULL, 0);
    unwatch(&svc);
    if (pipeline_destroy(svc.pl) != 0) status = 1;
    svc.pl = NULL;
    if (!svc.reloading) break;
    svc.reloading = false;
    mark_continuing(&svc.next, &svc.cfg);
    prev = svc.cfg;
    prev_digest = svc.digest;
    svc.cfg = svc.next;
    svc.digest = svc.next_digest;
    svc.next = (config){0};
  }
  /* The inputs may also have just ended: systemd hears the stop either way. */
  systemd_notify("STOPPING=1");
  pipeline_reload_finish();
  systemd_listen_drop_kept(); /* a reload's, when no pipeline took them */
  remove_pid_file(svc.cfg.pid_file);
  http_endpoint_close(svc.http);
  free(svc.http_address);
  uv_close((uv_handle_t *)&svc.settle, NULL);
  /* The timer is on this stack: its closing ends before the return. */
  uv_run(uv_default_loop(), UV_RUN_NOWAIT);
  config_free(&svc.cfg);
  return status;
}

/* ---- lumberjit --reload ---- */

int service_signal_reload(const char *path)
{
  char err[2048], line[64], *end;
  config cfg = {0};
  FILE *f;
  long pid;
  int rc = 1;

  if (config_load(path, registry_types, &cfg, err, sizeof err) != 0 ||
      cannot_resume(&cfg, err, sizeof err) ||
      pipeline_check(&cfg, err, sizeof err) != 0) {
    fprintf(stderr, "lumberjit: %s\nlumberjit: not reloading: the running "
            "configuration stays\n", err);
    goto out;
  }
  if (!cfg.pid_file) {
    fprintf(stderr, "lumberjit: %s sets no pid_file: no running process to "
            "reload (set lumberjit.pid_file, or send it SIGHUP)\n", path);
    goto out;
  }
  if (!(f = fopen(cfg.pid_file, "re"))) {
    fprintf(stderr, "lumberjit: pid_file %s: %s (is lumberjit running?)\n",
            cfg.pid_file, strerror(errno));
    goto out;
  }
  end = NULL;
  pid = fgets(line, sizeof line, f) ? strtol(line, &end, 10) : 0;
  fclose(f);
  if (pid <= 1 || !end || (*end != '\n' && *end != '\0')) {
    fprintf(stderr, "lumberjit: pid_file %s holds no process id\n",
            cfg.pid_file);
    goto out;
  }
  if (kill((pid_t)pid, SIGHUP) != 0) {
    fprintf(stderr, "lumberjit: process %ld (pid_file %s): %s\n", pid,
            cfg.pid_file, strerror(errno));
    goto out;
  }
  printf("%s: configuration OK; process %ld asked to reload (its log says "
         "how it went)\n", path, pid);
  rc = 0;
out:
  config_free(&cfg);
  return rc;
}
