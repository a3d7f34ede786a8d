/*
 * pipeline_build.c - builds a pipeline from a config (pipeline.h): opens
 * the outputs and the dead-letter path, prepares the inputs (resuming from
 * their checkpoints), starts the workers, each building its own sandboxes
 * on its own thread; and tears it all down again.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd_limit.h"
#include "heap.h"
#include "log.h"
#include "passthrough.h"
#include "pipeline_internal.h"
#include "sandbox_shelf.h"

const char *pipeline_keep(pipeline *pl, const char *s)
{
  char **k, *copy;

  if (!s) return NULL;
  k = realloc(pl->kept, (pl->nkept + 1) * sizeof *k);
  copy = strdup(s);
  if (k) pl->kept = k;
  if (!k || !copy) {
    free(copy);
    return NULL;
  }
  return pl->kept[pl->nkept++] = copy;
}

void **pipeline_kind_state(pipeline *pl, const input_kind *kind)
{
  size_t i;

  for (i = 0; i < pl->nkind_states; i++)
    if (pl->kind_states[i].kind == kind) return &pl->kind_states[i].state;
  /* Room for one a kind: at most one a plugin. */
  if (!pl->kind_states &&
      !(pl->kind_states = calloc(pl->ninputs_max, sizeof *pl->kind_states)))
    return NULL;
  pl->kind_states[i].kind = kind;
  pl->kind_states[i].state = NULL;
  pl->nkind_states++;
  return &pl->kind_states[i].state;
}

uint64_t pipeline_call_output_max(const config *cfg)
{
  uint64_t share = cfg->memory_budget / 32;

  return share > PIPELINE_CALL_OUTPUT_FLOOR ? share : PIPELINE_CALL_OUTPUT_FLOOR;
}

sandbox *pipeline_plugin_sandbox(const config *cfg, const config_plugin *p,
                                 sandbox_watchdog *wd, sandbox_log_fn log,
                                 void *log_ud, char *err, size_t errlen)
{
  sandbox_kind kind = p->role == PLUGIN_DECODER ? SANDBOX_DECODER
                    : p->role == PLUGIN_FILTER ? SANDBOX_FILTER
                                               : SANDBOX_ENCODER;
  sandbox_config sc = {
    .name = p->name, .filename = p->filename, .kind = kind,
    .settings = p->lua_settings, .module_dirs = p->module_dirs,
    .limits = p->limits, .log = log, .log_ud = log_ud
  };
  uint64_t most = pipeline_call_output_max(cfg);

  /* What one call makes is held until the call ends: it must fit in the
   * budget (pipeline.h). */
  if (!sc.limits.output_limit || sc.limits.output_limit > most)
    sc.limits.output_limit = most;
  char why[768];
  sandbox *sb = sandbox_create(&sc, wd, why, sizeof why);

  if (!sb) snprintf(err, errlen, "%s:%d: %s '%s': %s", p->file, p->line,
                    config_role_names[p->role], p->name, why);
  return sb;
}

static int build_outputs(pipeline *pl, char *err, size_t errlen)
{
  const config *cfg = pl->cfg;

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    pl_output *o;
    char why[256];
    if (p->role != PLUGIN_OUTPUT) continue;
    o = &pl->outputs[pl->noutputs++];
    o->cfg = p;
    o->name = pipeline_keep(pl, p->name);
    o->newline = p->newline;
    o->label = malloc(strlen(p->name) + sizeof "output ''");
    if (!o->name || !o->label) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    sprintf(o->label, "output '%s'", p->name);
    output_host h = {pl->loop, o->label, pipeline_sink_events(pl),
                     cfg->state_dir};
    if (p->type->output->open(&o->sink, &h, p, why, sizeof why) != 0) {
      snprintf(err, errlen, "%s:%d: output '%s': %s", p->file, p->line,
               p->name, why);
      return -1;
    }
  }
  return 0;
}

int pipeline_filter_build(const config *cfg, const config_plugin *p,
                          const char *name, sandbox *sb, sandbox_watchdog *wd,
                          sandbox_log_fn log, void *log_ud, router_filter *f,
                          char *err, size_t errlen)
{
  char why[256];

  f->name = name;
  f->mode = ((const config_filter *)p->settings)->mode;
  f->match = matcher_compile(p->message_matcher, why, sizeof why);
  if (!f->match) {
    snprintf(err, errlen, "%s:%d: filter '%s': message_matcher: %s",
             p->file, p->line, p->name, why);
    return -1;
  }
  f->sb = sb ? sb : pipeline_plugin_sandbox(cfg, p, wd, log, log_ud, err,
                                            errlen);
  return f->sb ? 0 : -1;
}

uint64_t pipeline_digest(const pipeline *pl, config_role role,
                         const char *name)
{
  for (size_t i = 0; i < pl->ndigests; i++)
    if (pl->digests[i].role == role && strcmp(pl->digests[i].name, name) == 0)
      return pl->digests[i].digest;
  return 0;
}

/* The sandbox a reload kept of plugin p for this worker, bound to its
 * thread and watchdog; NULL: none (or it cannot be bound: then it goes). */
static sandbox *kept_sandbox(pipeline *pl, worker *w, const config_plugin *p,
                             const char *owner)
{
  shelf_key key = {config_role_names[p->role], p->name, owner, w->id};
  sandbox *sb = shelf_take(&key, pipeline_digest(pl, p->role, p->name));

  if (sb && sandbox_attach(sb, pl->wd) != 0) {
    sandbox_destroy(sb);
    sb = NULL;
  }
  return sb;
}

/* On the worker's thread: plugin p's instance for `owner` (the input or
 * output it serves; "" for a filter), kept by a reload or loaded now. */
static sandbox *worker_sandbox(pipeline *pl, worker *w, const config_plugin *p,
                               const char *owner, char *err, size_t errlen)
{
  sandbox *sb = kept_sandbox(pl, w, p, owner);

  return sb ? sb : pipeline_plugin_sandbox(pl->cfg, p, pl->wd,
                                           log_sandbox_line, NULL, err, errlen);
}

static void shelve_one(pipeline *pl, worker *w, config_role role,
                       const char *name, const char *owner, sandbox **sb)
{
  shelf_key key = {config_role_names[role], name, owner, w->id};

  if (!*sb || sandbox_is_stopped(*sb)) return;
  shelf_put(&key, pipeline_digest(pl, role, name), *sb);
  *sb = NULL;
}

/* On the worker's thread as it ends, when the pipeline stops for a
 * reload: its running sandboxes go on the shelf for the next one. */
static void shelve_worker(void *ud, worker *w)
{
  pipeline *pl = ud;

  if (!pl->reloading) return;
  for (size_t i = 0; i < w->ninputs; i++)
    shelve_one(pl, w, PLUGIN_DECODER, w->inputs[i]->decoder_name,
               w->inputs[i]->name, &w->inputs[i]->decoder);
  for (size_t i = 0; i < w->noutputs; i++)
    shelve_one(pl, w, PLUGIN_ENCODER, w->outputs[i].encoder_name,
               w->outputs[i].name, &w->outputs[i].encoder);
  for (size_t i = 0; i < w->nfilters; i++)
    shelve_one(pl, w, PLUGIN_FILTER, w->filters[i].name, "",
               &w->filters[i].sb);
}

/* On the worker's thread: its instance of each filter. */
static int build_worker_filters(pipeline *pl, worker *w, char *err,
                                size_t errlen)
{
  const config *cfg = pl->cfg;

  w->filters = calloc(pl->nfilters ? pl->nfilters : 1, sizeof *w->filters);
  if (!w->filters) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  w->nfilters = pl->nfilters;
  for (size_t i = 0; i < pl->nfilters; i++) {
    const config_plugin *p = pl->filters[i].cfg;
    sandbox *kept = kept_sandbox(pl, w, p, "");
    if (pipeline_filter_build(cfg, p, pl->filters[i].name, kept, pl->wd,
                              log_sandbox_line, NULL, &w->filters[i], err,
                              errlen) != 0) {
      sandbox_destroy(kept);
      return -1;
    }
  }
  return 0;
}

/* The filters, in the config's order (each worker builds its instances). */
static int build_filters(pipeline *pl, char *err, size_t errlen)
{
  const config *cfg = pl->cfg;

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    pl_filter *f;
    if (p->role != PLUGIN_FILTER) continue;
    f = &pl->filters[pl->nfilters++];
    f->cfg = p;
    f->pl = pl;
    f->name = pipeline_keep(pl, p->name);
    f->ticker_interval_ms =
        ((const config_filter *)p->settings)->ticker_interval_ms;
    if (!f->name) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    uv_timer_init(pl->loop, &f->tick);
    f->tick.data = f;
  }
  return 0;
}

/* On the worker's thread: its matchers, encoders and decoders. */
static int build_worker(void *ud, worker *w, char *err, size_t errlen)
{
  pipeline *pl = ud;
  const config *cfg = pl->cfg;

  w->outputs = calloc(pl->noutputs ? pl->noutputs : 1, sizeof *w->outputs);
  if (!w->outputs) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  w->noutputs = pl->noutputs;
  w->dl_output = pl->noutputs;
  for (size_t i = 0; i < pl->noutputs; i++) {
    const config_plugin *p = pl->outputs[i].cfg;
    router_output *ro = &w->outputs[i];
    char why[256];
    *ro = (router_output){.name = pl->outputs[i].name,
                          .encoder_name = pipeline_keep(pl, p->encoder),
                          .newline = p->newline};
    if (cfg->dead_letter_output && strcmp(p->name, cfg->dead_letter_output) == 0)
      w->dl_output = i;
    ro->match = matcher_compile(p->message_matcher, why, sizeof why);
    if (!ro->match) {
      snprintf(err, errlen, "%s:%d: output '%s': message_matcher: %s",
               p->file, p->line, p->name, why);
      return -1;
    }
    if (p->encoder) {
      ro->encoder = worker_sandbox(
          pl, w, config_find(cfg, p->encoder, PLUGIN_ENCODER), ro->name, err,
          errlen);
      if (!ro->encoder) return -1;
    }
    if (p->type->output->route &&
        p->type->output->route(p, &ro->route, &ro->route_state, why,
                               sizeof why) != 0) {
      snprintf(err, errlen, "%s:%d: output '%s': %s", p->file, p->line,
               p->name, why);
      return -1;
    }
  }
  if (build_worker_filters(pl, w, err, errlen) != 0) return -1;
  for (size_t i = 0; i < w->ninputs; i++) {
    router_input *ri = w->inputs[i];
    if (!ri->decoder_name) continue;
    ri->decoder = worker_sandbox(
        pl, w, config_find(cfg, ri->decoder_name, PLUGIN_DECODER), ri->name,
        err, errlen);
    if (!ri->decoder) return -1;
  }
  return 0;
}

/* Workers an input that spreads takes at most: each holds a decoder of
 * it, so a machine of many cores does not make one per core. */
#define SPREAD_MAX 4

static size_t spread_width(const pipeline *pl)
{
  return pl->cfg->workers < SPREAD_MAX ? pl->cfg->workers : SPREAD_MAX;
}

/* An input that spreads gets a router_input on each of its workers,
 * workers first .. first + nspread - 1 (mod N), a copy of its settings;
 * each worker builds the decoder of its own. */
static int spread_input(pipeline *pl, pl_input *pi, size_t first)
{
  size_t width = spread_width(pl);

  pi->nspread = width < pl->nworkers ? width : pl->nworkers;
  pi->spread_first = first;
  pi->spread = calloc(pi->nspread, sizeof *pi->spread);
  if (!pi->spread) return -1;
  for (size_t j = 0; j < pi->nspread; j++) {
    worker *w = &pl->workers[(first + j) % pl->nworkers];
    pi->spread[j] = pi->ri;
    w->inputs[w->ninputs++] = &pi->spread[j];
  }
  return 0;
}

/* Starts the workers: no more than the inputs can keep busy, at least
 * one (workers = 0: one, with no thread, on the loop). The inputs take the workers in turn: one each, or up to SPREAD_MAX
 * for an input that spreads its sources. */
static int start_workers(pipeline *pl, char *err, size_t errlen)
{
  size_t busy = 0, n, next = 0;

  for (size_t i = 0; i < pl->ninputs; i++)
    busy += pl->inputs[i].spreads ? spread_width(pl) : 1;
  n = pl->cfg->workers < busy ? pl->cfg->workers : busy;
  pl->nworkers = n ? n : 1;
  pl->workers = calloc(pl->nworkers, sizeof *pl->workers);
  if (!pl->workers) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < pl->nworkers; k++) {
    worker *w = &pl->workers[k];
    w->id = (unsigned)k;
    w->on_loop = pl->cfg->workers == 0;
    w->build = build_worker;
    w->shelve = shelve_worker;
    w->build_ud = pl;
    w->inputs = calloc(pl->ninputs ? pl->ninputs : 1, sizeof *w->inputs);
    if (!w->inputs) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
  }
  for (size_t i = 0; i < pl->ninputs; i++) {
    pl_input *pi = &pl->inputs[i];
    worker *w = &pl->workers[next % pl->nworkers];
    if (pi->spreads && pl->nworkers > 1) {
      if (spread_input(pl, pi, next) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      next += pi->nspread;
      continue;
    }
    pi->w = w;
    w->inputs[w->ninputs++] = &pi->ri;
    next++;
  }
  for (size_t k = 0; k < pl->nworkers; k++)
    if (worker_start(&pl->workers[k], &pl->notify, err, errlen) != 0)
      return -1;
  return 0;
}

void pipeline_source_place(pl_source *src)
{
  pl_input *pi = src->owner;
  size_t j;

  if (!pi->spread) {
    src->w = pi->w;
    src->ri = &pi->ri;
    return;
  }
  j = pi->next_worker++ % pi->nspread;
  src->w = &pi->pl->workers[(pi->spread_first + j) % pi->pl->nworkers];
  src->ri = &pi->spread[j];
}

pl_source *pipeline_source_new(pl_input *pi)
{
  pl_source *src = calloc(1, sizeof *src);

  if (!src) return NULL;
  src->owner = pi;
  src->in.name = pi->name;
  src->in.max_line = pi->ri.max_line;
  src->in.keep_cr = pi->keep_cr;
  src->in.fd = -1;
  src->in.handler = pipeline_input_handler(pi);
  src->next = pi->sources;
  pi->sources = src;
  return src;
}

static void free_source(pl_source *src)
{
  input_free(&src->in);
  join_free(&src->join);
  if (src->job) {
    work_job_free(src->job);
    free(src->job);
  }
  free(src);
}

void pipeline_source_free(pl_source *src)
{
  for (pl_source **p = &src->owner->sources; *p; p = &(*p)->next)
    if (*p == src) {
      *p = src->next;
      break;
    }
  free_source(src);
}

static int build_input(pipeline *pl, pl_input *pi, const config_plugin *p,
                       char *err, size_t errlen)
{
  pi->pl = pl;
  pi->cfg = p;
  pi->name = pipeline_keep(pl, p->name);
  pi->keep_cr = p->keep_cr;
  pi->ri = (router_input){.name = pi->name, .max_line = p->max_line,
                          .long_lines = p->long_lines,
                          .decoder_name = pipeline_keep(pl, p->decoder)};
  if (!pi->name || (p->decoder && !pi->ri.decoder_name)) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  pi->kind = p->type->input;
  return pi->kind->build(pi, p, err, errlen);
}

static int build_inputs(pipeline *pl, char *err, size_t errlen)
{
  const config *cfg = pl->cfg;
  char why[512];

  if (checkpoint_store_open(&pl->store, cfg->state_dir, why, sizeof why) != 0) {
    snprintf(err, errlen, "%s: %s", cfg->file, why);
    return -1;
  }

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    if (p->role != PLUGIN_INPUT) continue;
    if (build_input(pl, &pl->inputs[pl->ninputs++], p, err, errlen) != 0)
      return -1;
  }
  return 0;
}

static int build_dead_letter(pipeline *pl, char *err, size_t errlen)
{
  output_sink *shared = NULL;
  char why[256];

  for (size_t i = 0; i < pl->noutputs && pl->cfg->dead_letter_output; i++)
    if (strcmp(pl->outputs[i].name, pl->cfg->dead_letter_output) == 0)
      shared = &pl->outputs[i].sink;
  if (dead_letter_open(&pl->dl, pl->loop, pl->cfg->dead_letter_path, shared,
                       pipeline_sink_events(pl), why, sizeof why) != 0) {
    snprintf(err, errlen, "%s: dead-letter path: %s", pl->cfg->file, why);
    return -1;
  }
  if (pl->dl.owns_sink && pl->cfg->dead_letter_max_bytes)
    output_cap_size(&pl->dl.own, pl->cfg->dead_letter_max_bytes,
                    pl->cfg->dead_letter_keep);
  return 0;
}

/* What is queued for writing is bounded by memory_budget: each sink (the
 * outputs and the dead-letter file) gets an equal share of three quarters
 * of it as its high-water mark, so the inputs pause before the queues pass
 * the budget; the records read and not yet back from the workers take the
 * last quarter. */
static void share_budget(pipeline *pl)
{
  size_t sinks = pl->noutputs + (pl->dl.owns_sink ? 1 : 0);
  uint64_t queues = pl->cfg->memory_budget - pl->cfg->memory_budget / 4;
  size_t share = (size_t)(queues / (sinks ? sinks : 1));

  /* A quarter for the records at the workers (pipeline.c), the rest for
   * what the sinks queue. */
  pl->workers_budget = pl->cfg->memory_budget / 4;
  for (size_t i = 0; i < pl->noutputs; i++)
    output_set_high_water(&pl->outputs[i].sink, share);
  if (pl->dl.owns_sink) output_set_high_water(&pl->dl.own, share);
}

/* The watchdog thread runs only when some plugin has a CPU or instruction
 * limit: with none, nothing wakes up every interval. */
int pipeline_start_watchdog(const config *cfg, sandbox_watchdog **wd,
                            char *err, size_t errlen)
{
  bool needed = false;

  *wd = NULL;
  for (size_t i = 0; i < cfg->nplugins; i++) {
    const sandbox_limits *l = &cfg->plugins[i].limits;
    if ((cfg->plugins[i].type->flags & PLUGIN_SANDBOX) &&
        (l->cpu_limit_ms || l->instruction_limit))
      needed = true;
  }
  if (!needed) return 0;
  *wd = sandbox_watchdog_start(cfg->watchdog_interval_ms, err, errlen);
  return *wd ? 0 : -1;
}

/* What each sandboxed plugin is (shelf_digest), for the sandboxes a reload
 * keeps: this pipeline's workers take those of the same digest, and put
 * theirs on the shelf under it. */
static int digest_plugins(pipeline *pl, char *err, size_t errlen)
{
  const config *cfg = pl->cfg;

  pl->digests = calloc(cfg->nplugins ? cfg->nplugins : 1, sizeof *pl->digests);
  if (!pl->digests) goto oom;
  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    if (!(p->type->flags & PLUGIN_SANDBOX)) continue;
    pl->digests[pl->ndigests] = (pl_digest){
      p->role, pipeline_keep(pl, p->name), shelf_digest(cfg, p)};
    if (!pl->digests[pl->ndigests++].name) goto oom;
  }
  return 0;
oom:
  snprintf(err, errlen, "out of memory");
  return -1;
}

/* Warns when the files tail_inputs may hold open and the connections
 * syslog_inputs may take cannot all have a descriptor (fd_limit.h): those
 * past it wait (files) or are refused (connections), counted and logged. */
static void warn_descriptor_budget(const config *cfg)
{
  uint64_t want = 0, budget = fd_limit_budget();

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    if (p->role == PLUGIN_INPUT && p->type->input->descriptors)
      want += p->type->input->descriptors(p);
  }
  if (want > budget)
    log_warning("the inputs' max_open_files and max_connections add up "
            "to %" PRIu64 " descriptors, but the limit of %" PRIu64 " "
            "(RLIMIT_NOFILE) leaves them %" PRIu64 " beside those open and "
            "the %d kept for checkpoints, outputs and dead letters: files "
            "past it wait for a free one, connections past it are refused; "
            "raise the hard limit (ulimit -Hn, LimitNOFILE=) to take them "
            "all", want, fd_limit_current(), budget, FD_LIMIT_RESERVED);
}

/* Says which plugins' output_limit memory_budget holds lower. */
static void warn_call_output(const config *cfg)
{
  uint64_t most = pipeline_call_output_max(cfg);

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    if ((p->type->flags & PLUGIN_SANDBOX) &&
        (!p->limits.output_limit || p->limits.output_limit > most))
      log_warning("%s '%s': a call may make at most %" PRIu64 " bytes (a 32nd "
              "of memory_budget), not the %s of its output_limit: what a "
              "call makes waits in memory until it ends",
              config_role_names[p->role], p->name, most,
              p->limits.output_limit ? "more" : "no bound");
  }
}

pipeline *pipeline_create(const config *cfg, uv_loop_t *loop, char *err,
                          size_t errlen)
{
  pipeline *pl = calloc(1, sizeof *pl);

  if (!pl) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pl->loop = loop;
  pl->cfg = cfg;
  pl->stop_timeout_ms = cfg->stop_timeout_ms;
  pl->checkpoint_interval_ms = cfg->checkpoint_interval_ms;
  pl->checkpointing = cfg->state_dir != NULL;
  uv_timer_init(loop, &pl->deadline);
  pl->deadline.data = pl;
  uv_timer_init(loop, &pl->checkpoints);
  pl->checkpoints.data = pl;
  uv_timer_init(loop, &pl->quiet);
  pl->quiet.data = pl;
  uv_timer_init(loop, &pl->metrics);
  pl->metrics.data = pl;
  pl->metrics_interval_ms = cfg->metrics_interval_ms;
  uv_timer_init(loop, &pl->stats_timer);
  pl->stats_timer.data = pl;
  pl->stats_interval_ms = cfg->stats_interval_ms;
  uv_async_init(loop, &pl->notify, pipeline_jobs_back);
  pl->notify.data = pl;
  uv_unref((uv_handle_t *)&pl->notify);
  uv_prepare_init(loop, &pl->send_before);
  uv_check_init(loop, &pl->send_after);
  pl->send_before.data = pl->send_after.data = pl;
  uv_prepare_start(&pl->send_before, pipeline_send_before);
  uv_check_start(&pl->send_after, pipeline_send_after);
  uv_unref((uv_handle_t *)&pl->send_before);
  uv_unref((uv_handle_t *)&pl->send_after);
  pl->ninputs_max = cfg->nplugins;
  pl->inputs = calloc(cfg->nplugins, sizeof *pl->inputs);
  pl->outputs = calloc(cfg->nplugins, sizeof *pl->outputs);
  pl->filters = calloc(cfg->nplugins, sizeof *pl->filters);
  pl->snapshot.inputs = calloc(cfg->nplugins, sizeof *pl->snapshot.inputs);
  pl->snapshot.outputs = calloc(cfg->nplugins, sizeof *pl->snapshot.outputs);
  pl->snapshot.filters = calloc(cfg->nplugins, sizeof *pl->snapshot.filters);
  pl->snapshot.plugins = calloc(cfg->nplugins, sizeof *pl->snapshot.plugins);
  if (!pl->inputs || !pl->outputs || !pl->filters || !pl->snapshot.inputs ||
      !pl->snapshot.outputs || !pl->snapshot.filters ||
      !pl->snapshot.plugins) {
    snprintf(err, errlen, "out of memory");
    pipeline_destroy(pl);
    return NULL;
  }
  if (pipeline_start_watchdog(cfg, &pl->wd, err, errlen) != 0 ||
      digest_plugins(pl, err, errlen) != 0 ||
      build_outputs(pl, err, errlen) != 0 ||
      build_filters(pl, err, errlen) != 0 ||
      build_inputs(pl, err, errlen) != 0 ||
      build_dead_letter(pl, err, errlen) != 0 ||
      passthrough_plan(pl, err, errlen) != 0 ||
      start_workers(pl, err, errlen) != 0) {
    pipeline_destroy(pl);
    return NULL;
  }
  if (cfg->metrics_path && !(pl->metrics_path = pipeline_keep(pl, cfg->metrics_path))) {
    snprintf(err, errlen, "out of memory");
    pipeline_destroy(pl);
    return NULL;
  }
  warn_descriptor_budget(cfg);
  warn_call_output(cfg);
  share_budget(pl);
  heap_keep(cfg->memory_budget);
  for (size_t i = 0; i < pl->noutputs; i++) pl->outputs[i].cfg = NULL;
  for (size_t i = 0; i < pl->nfilters; i++) pl->filters[i].cfg = NULL;
  for (size_t i = 0; i < pl->ninputs; i++) pl->inputs[i].cfg = NULL;
  pl->cfg = NULL;
  return pl;
}

int pipeline_check(const config *cfg, char *err, size_t errlen)
{
  sandbox_watchdog *wd;
  int rc = 0;

  if (pipeline_start_watchdog(cfg, &wd, err, errlen) != 0) return -1;
  for (size_t i = 0; i < cfg->nplugins && rc == 0; i++) {
    const config_plugin *p = &cfg->plugins[i];
    sandbox *sb;
    char why[512];
    /* What fails a start (a producer that cannot be made): --check says
     * so. */
    if (p->role == PLUGIN_OUTPUT && p->type->output->check &&
        p->type->output->check(p, why, sizeof why) != 0) {
      snprintf(err, errlen, "%s:%d: %s '%s': %s", p->file, p->line,
               p->type->name, p->name, why);
      rc = -1;
    }
    if (!(p->type->flags & PLUGIN_SANDBOX)) continue;
    sb = pipeline_plugin_sandbox(cfg, p, wd, log_sandbox_line, NULL, err,
                                 errlen);
    if (!sb) rc = -1;
    sandbox_destroy(sb);
  }
  sandbox_watchdog_stop(wd);
  return rc;
}

/* Joins the workers; their sandboxes go with them. */
void pipeline_stop_workers(pipeline *pl)
{
  for (size_t k = 0; k < pl->nworkers; k++) worker_stop(&pl->workers[k]);
}

/* Closes every loop handle and lets the loop finish closing them. */
static void close_handles(pipeline *pl)
{
  if (pl->handles_closed) return;
  pl->handles_closed = true;
  pipeline_each_sink(pl, output_close_handles);
  for (size_t i = 0; i < pl->ninputs; i++)
    if (pl->inputs[i].kind && pl->inputs[i].kind->close_handles)
      pl->inputs[i].kind->close_handles(&pl->inputs[i]);
  for (size_t i = 0; i < pl->nkind_states; i++)
    if (pl->kind_states[i].kind->close_shared)
      pl->kind_states[i].kind->close_shared(&pl->kind_states[i].state);
  for (size_t i = 0; i < pl->nfilters; i++)
    uv_close((uv_handle_t *)&pl->filters[i].tick, NULL);
  uv_close((uv_handle_t *)&pl->deadline, NULL);
  uv_close((uv_handle_t *)&pl->checkpoints, NULL);
  uv_close((uv_handle_t *)&pl->quiet, NULL);
  uv_close((uv_handle_t *)&pl->metrics, NULL);
  uv_close((uv_handle_t *)&pl->stats_timer, NULL);
  uv_close((uv_handle_t *)&pl->notify, NULL);
  uv_close((uv_handle_t *)&pl->send_before, NULL);
  uv_close((uv_handle_t *)&pl->send_after, NULL);
  uv_run(pl->loop, UV_RUN_NOWAIT);
}

int pipeline_destroy(pipeline *pl)
{
  int rc = 0;

  if (!pl) return 0;
  pipeline_stop_workers(pl); /* before the async handle closes */
  close_handles(pl);
  for (size_t i = 0; i < pl->nworkers; i++) {
    free(pl->workers[i].outputs);
    free(pl->workers[i].filters);
    free(pl->workers[i].inputs);
    free(pl->workers[i].plugins);
  }
  free(pl->workers);
  for (size_t i = 0; i < pl->ninputs; i++) {
    pl_input *pi = &pl->inputs[i];
    if (pi->kind && pi->kind->free) pi->kind->free(pi);
    free(pi->spread);
    while (pi->sources) {
      pl_source *src = pi->sources;
      pi->sources = src->next;
      free_source(src);
    }
  }
  while (pl->spare_jobs) {
    work_job *job = pl->spare_jobs;
    pl->spare_jobs = job->next;
    work_job_free(job);
    free(job);
  }
  for (size_t i = 0; i < pl->noutputs; i++) {
    if (output_close(&pl->outputs[i].sink) != 0) rc = -1;
    free(pl->outputs[i].label);
  }
  if (dead_letter_close(&pl->dl) != 0) rc = -1;
  /* After the sinks: their records no longer hold tickets. */
  checkpoint_store_close(&pl->store);
  join_matcher_free(pl->join_matcher);
  free(pl->kind_states);
  free(pl->digests);
  passthrough_free(pl);
  sandbox_watchdog_stop(pl->wd);
  free(pl->inputs);
  free(pl->outputs);
  free(pl->filters);
  free(pl->snapshot.inputs);
  free(pl->snapshot.outputs);
  free(pl->snapshot.filters);
  free(pl->snapshot.plugins);
  for (size_t i = 0; i < pl->nkept; i++) free(pl->kept[i]);
  free(pl->kept);
  free(pl);
  return rc;
}
