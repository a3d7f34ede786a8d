/*
 * try.c - the --try mode (try.h).
 *
 * A run loads the config anew, makes the decoder's (and the encoder's)
 * sandbox as the pipeline makes them, hands it the samples line by line
 * and prints what came of each. --watch repeats runs (try_watch.c).
 *
 * The plugins keep their limits but not max_failures: a parser that fails
 * on ten lines in a row would stop, and its author would see nothing of
 * the lines after them.
 *
 * What a run prints does not depend on when it runs, so that --expect's
 * golden files (try_expect.c) hold: a message the decoder gave no
 * Timestamp, which the sandbox stamps with the clock, gets 0 instead.
 */
#include "try.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "log.h"
#include "message_text.h"
#include "pipeline.h"
#include "filter_stage.h"
#include "registry.h"
#include "signals.h"
#include "try_expect.h"
#include "try_internal.h"

/* The most failures in a row a config may allow (config_roles.c). */
#define TRY_MAX_FAILURES 1000000000

typedef struct {
  uint64_t lines, messages, rejected, failed;
  uint64_t encoded, enc_skipped, enc_rejected, enc_failed;
} try_counts;

/* One run: its plugins, what it prints and what it counted. */
typedef struct {
  const try_options *o;
  const buf *stdin_copy;  /* standard input, kept for every run; or NULL */
  sandbox *decoder, *encoder;
  msg_batch batch;
  buf out, encoded;
  buf prints;             /* print() lines of the running call, "\n"-ended */
  bool flush_each;        /* stdout is a terminal: show each line at once */
  try_expect *expect;     /* --expect: takes the output instead of stdout */
  int64_t call_start, call_end; /* the clock around the last decoder call */
  filter_stage stage;     /* the config's filters, after the decoder */
  router_filter_counts *filter_counts;
  try_counts n;
} trial;

/* Lines of a file or of memory, without their "\n". */
typedef struct {
  FILE *f;
  const buf *mem;
  size_t pos;
  char *line;
  size_t cap;
} line_reader;

static bool next_line(line_reader *r, const char **line, size_t *len)
{
  if (r->mem) {
    const char *start = r->mem->data + r->pos, *nl;
    size_t left = r->mem->len - r->pos;
    if (!left) return false;
    nl = memchr(start, '\n', left);
    *line = start;
    *len = nl ? (size_t)(nl - start) : left;
    r->pos += *len + (nl != NULL);
    return true;
  }
  ssize_t n = getline(&r->line, &r->cap, r->f);
  if (n < 0) return false;
  *line = r->line;
  *len = (size_t)n - (n > 0 && r->line[n - 1] == '\n');
  return true;
}

/* A sample line's whole output, to stdout or to --expect. */
static void write_out(trial *t)
{
  if (t->expect) {
    try_expect_add(t->expect, &t->out);
  } else {
    fwrite(t->out.data, 1, t->out.len, stdout);
    if (t->flush_each) fflush(stdout);
  }
  buf_clear(&t->out);
}

/* The text after `sandbox "NAME" print: ` when line is a print() line of
 * the plugin NAME, else NULL. */
static const char *printed(const char *line, const char *name)
{
  size_t n = strlen(name);

  if (strncmp(line, "sandbox \"", 9) != 0 ||
      strncmp(line + 9, name, n) != 0 ||
      strncmp(line + 9 + n, "\" print: ", 9) != 0)
    return NULL;
  return line + 9 + n + 9;
}

/* The runtime's log: a plugin's print() line is kept to be shown with the
 * line that made it; the rest goes to stderr as in a normal run. */
static void on_sandbox_log(void *ud, const char *line)
{
  trial *t = ud;
  const char *text = printed(line, t->o->decoder);

  if (!text && t->o->encoder) text = printed(line, t->o->encoder);
  for (size_t i = 0; !text && i < t->stage.nfilters; i++)
    text = printed(line, t->stage.filters[i].name);
  if (!text) {
    log_sandbox_line(NULL, line);
    return;
  }
  buf_append_str(&t->prints, text);
  buf_append_str(&t->prints, "\n");
}

/* Appends the kept print() lines, each after `label`. */
static void put_prints(trial *t, const char *label)
{
  const char *line = t->prints.data, *end = line + t->prints.len;

  while (line < end) {
    const char *nl = memchr(line, '\n', (size_t)(end - line));
    buf_append_str(&t->out, label);
    buf_append(&t->out, line, (size_t)(nl - line) + 1);
    line = nl + 1;
  }
  buf_clear(&t->prints);
}

/* Dumps a message of the last decoder call. One whose Timestamp the clock
 * gave during the call is made 0, and said to be unset: the sandbox stamps
 * a message without one with a reading of that clock, and any other
 * reading of it is as unrepeatable. The encoder sees the 0 too. */
static void dump_message(trial *t, msg *m)
{
  static const char unset[] = ", unset: a run stamps the time of decoding";
  size_t at = t->out.len;
  const char *nl;

  if (m->timestamp < t->call_start || m->timestamp > t->call_end) {
    message_text(&t->out, m, "  ");
    return;
  }
  m->timestamp = 0;
  if (!message_text(&t->out, m, "  ")) return;
  /* The first line of the dump is the Timestamp's: the note ends it. */
  nl = memchr(t->out.data + at, '\n', t->out.len - at);
  at = (size_t)(nl - t->out.data);
  if (!buf_reserve(&t->out, sizeof unset - 1)) return;
  memmove(t->out.data + at + sizeof unset - 1, t->out.data + at,
          t->out.len - at);
  memcpy(t->out.data + at, unset, sizeof unset - 1);
  t->out.len += sizeof unset - 1;
}

static void encode_one(trial *t, const msg *m)
{
  sandbox_result res;
  size_t len;

  buf_clear(&t->encoded);
  sandbox_encode(t->encoder, m, &t->encoded, &res);
  put_prints(t, "  encoder print: ");
  switch (res.status) {
  case SANDBOX_OK:
    t->n.encoded++;
    len = t->encoded.len;
    if (len && t->encoded.data[len - 1] == '\n') len--;
    buf_append_str(&t->out, "  encoded: ");
    buf_append(&t->out, t->encoded.data, len);
    buf_append_str(&t->out, "\n");
    return;
  case SANDBOX_SKIPPED:
    t->n.enc_skipped++;
    buf_append_str(&t->out, "  encoder skipped it\n");
    return;
  case SANDBOX_REJECTED:
    t->n.enc_rejected++;
    buf_append_str(&t->out, "  encoder rejected it: ");
    break;
  case SANDBOX_FAILED:
  case SANDBOX_STOPPED:
    t->n.enc_failed++;
    buf_append_str(&t->out, "  encoder failed: ");
    break;
  }
  buf_append_str(&t->out, res.reason);
  buf_append_str(&t->out, "\n");
}

static void run_filters(trial *t);

/* The batch's messages; with `final`, each as the encoder writes it too.
 * Before the filters, a Timestamp the dump shows as unset keeps its value
 * for them, as in a run. */
static void dump_messages(trial *t, bool final)
{
  uint32_t n = t->batch.len;
  char head[64];

  for (uint32_t k = 0; k < n; k++) {
    msg *m = &t->batch.msgs[k];
    int64_t ts = m->timestamp;
    if (n > 1) {
      snprintf(head, sizeof head, "  -- message %" PRIu32 " of %" PRIu32 "\n",
               k + 1, n);
      buf_append_str(&t->out, head);
    }
    dump_message(t, m);
    if (!final) m->timestamp = ts;
    else if (t->encoder) encode_one(t, m);
  }
}

static void decode_one(trial *t, const char *source, uint64_t lineno,
                       const char *line, size_t len)
{
  msg_origin origin = {.input = t->o->decoder, .position = lineno,
                       .bytes = line, .len = len};
  sandbox_result res;
  char head[64];

  t->n.lines++;
  msg_batch_clear(&t->batch);
  t->call_start = msg_now_ns();
  sandbox_decode(t->decoder, &origin, &t->batch, &res);
  t->call_end = msg_now_ns();
  buf_append_str(&t->out, source);
  snprintf(head, sizeof head, ":%" PRIu64 ": ", lineno);
  buf_append_str(&t->out, head);
  if (res.status != SANDBOX_OK) {
    bool rejected = res.status == SANDBOX_REJECTED;
    *(rejected ? &t->n.rejected : &t->n.failed) += 1;
    buf_append_str(&t->out, rejected ? "rejected: " : "failed: ");
    buf_append_str(&t->out, res.reason);
    buf_append_str(&t->out, "\n");
    put_prints(t, "  print: ");
  } else {
    uint32_t n = t->batch.len;
    snprintf(head, sizeof head, "%" PRIu32 " message%s\n", n, n == 1 ? "" : "s");
    buf_append_str(&t->out, head);
    put_prints(t, "  print: ");
    t->n.messages += n;
    if (t->stage.nfilters) {
      /* What the decoder made, as the filters will see it; then what came
       * through them is what the outputs would get. */
      dump_messages(t, false);
      run_filters(t);
    }
    dump_messages(t, true);
  }
  write_out(t);
}

/* An inline filter failed on m, which a run would dead-letter. */
static void filter_failed(void *ud, const router_filter *f, const msg *m,
                          const char *reason)
{
  trial *t = ud;

  (void)m;
  buf_append_str(&t->out, "  filter '");
  buf_append_str(&t->out, f->name);
  buf_append_str(&t->out, "' failed: ");
  buf_append_str(&t->out, reason);
  buf_append_str(&t->out, "\n");
}

/* The batch through the config's filters, in their order, as a worker
 * runs them (filter_stage.h). */
static void run_filters(trial *t)
{
  char head[64];

  filter_stage_run(&t->stage, &t->batch, 0);
  t->call_end = msg_now_ns(); /* what the filters stamped is unset too */
  put_prints(t, "  filter print: ");
  snprintf(head, sizeof head, "  after the filters: %" PRIu32 " message%s\n",
           t->batch.len, t->batch.len == 1 ? "" : "s");
  buf_append_str(&t->out, head);
}

/* Decodes every line of one sample; -1 when it cannot be read. */
static int try_source(trial *t, const char *path)
{
  bool is_stdin = strcmp(path, "-") == 0;
  line_reader r = {.mem = is_stdin ? t->stdin_copy : NULL};
  const char *line;
  size_t len;
  uint64_t lineno = 0;
  int rc = 0;

  if (!r.mem) r.f = is_stdin ? stdin : fopen(path, "r");
  if (!r.mem && !r.f) {
    fprintf(stderr, "lumberjit: --try: cannot read %s: %s\n", path,
            strerror(errno));
    return -1;
  }
  while (next_line(&r, &line, &len)) decode_one(t, path, ++lineno, line, len);
  if (r.f && ferror(r.f)) {
    fprintf(stderr, "lumberjit: --try: cannot read %s: %s\n", path,
            strerror(errno));
    rc = -1;
  }
  if (r.f && !is_stdin) fclose(r.f);
  free(r.line);
  return rc;
}

/* The named plugin of its role, with every line run whatever its
 * max_failures; NULL with the message printed. */
static sandbox *load_plugin(trial *t, const config *cfg, const char *name,
                            config_role role, sandbox_watchdog *wd)
{
  const config_plugin *p = config_find(cfg, name, role);
  config_plugin copy;
  char err[2048];
  sandbox *sb;

  if (!p) {
    fprintf(stderr, "lumberjit: %s: no %s '%s' in %s\n",
            role == PLUGIN_DECODER ? "--try" : "--encode",
            role == PLUGIN_DECODER ? "decoder" : "encoder", name, cfg->file);
    return NULL;
  }
  copy = *p;
  copy.limits.max_failures = TRY_MAX_FAILURES;
  copy.limits.quiet_rebuilds = true; /* each failure shows under its line */
  sb = pipeline_plugin_sandbox(cfg, &copy, wd, on_sandbox_log, t, err,
                               sizeof err);
  if (!sb) fprintf(stderr, "lumberjit: %s\n", err);
  return sb;
}

/* The config's filters, each run on every line whatever its
 * max_failures; -1 with the message printed. */
static int load_filters(trial *t, const config *cfg, sandbox_watchdog *wd)
{
  router_filter *filters = calloc(cfg->nplugins, sizeof *filters);
  size_t n = 0;
  int rc = 0;

  t->filter_counts = calloc(cfg->nplugins, sizeof *t->filter_counts);
  if (!filters || !t->filter_counts) {
    free(filters);
    fputs("lumberjit: --try: out of memory\n", stderr);
    return -1;
  }
  for (size_t i = 0; i < cfg->nplugins && rc == 0; i++) {
    const config_plugin *p = &cfg->plugins[i];
    config_plugin copy;
    char err[2048];
    if (p->role != PLUGIN_FILTER) continue;
    copy = *p;
    copy.limits.max_failures = TRY_MAX_FAILURES;
    copy.limits.quiet_rebuilds = true; /* each failure shows under its line */
    if (pipeline_filter_build(cfg, &copy, p->name, NULL, wd, on_sandbox_log, t,
                              &filters[n++], err, sizeof err) != 0) {
      fprintf(stderr, "lumberjit: %s\n", err);
      rc = -1;
    }
  }
  filter_stage_init(&t->stage, filters, n, filter_failed, t);
  t->stage.counts = t->filter_counts;
  return rc;
}

/* At the end of the samples, each filter's last timer_event (shutdown):
 * what a run's filters send on as it ends. */
static void last_ticks(trial *t)
{
  char head[256];

  for (size_t k = 0; k < t->stage.nfilters; k++) {
    if (!sandbox_has_timer(t->stage.filters[k].sb)) continue;
    msg_batch_clear(&t->batch);
    t->call_start = msg_now_ns();
    filter_stage_tick(&t->stage, k, t->call_start, true, &t->batch);
    t->call_end = msg_now_ns();
    snprintf(head, sizeof head, "filter '%s' timer_event (shutdown): "
             "%" PRIu32 " message%s\n", t->stage.filters[k].name,
             t->batch.len, t->batch.len == 1 ? "" : "s");
    buf_append_str(&t->out, head);
    put_prints(t, "  filter print: ");
    dump_messages(t, true);
    write_out(t);
  }
}

/* "1 line", "2 lines". */
static void print_count(uint64_t n, const char *what)
{
  fprintf(stderr, "%" PRIu64 " %s%s", n, what, n == 1 ? "" : "s");
}

static void print_summary(const trial *t)
{
  const try_counts *n = &t->n;

  fprintf(stderr, "lumberjit: --try %s: ", t->o->decoder);
  print_count(n->lines, "line");
  fputs(", ", stderr);
  print_count(n->messages, "message");
  fprintf(stderr, ", %" PRIu64 " rejected, %" PRIu64 " failed", n->rejected,
          n->failed);
  for (size_t k = 0; k < t->stage.nfilters; k++) {
    const router_filter_counts *c = &t->filter_counts[k];
    fprintf(stderr, "; filter %s: %" PRIu64 " matched, %" PRIu64 " injected, "
            "%" PRIu64 " dropped, %" PRIu64 " failed", t->stage.filters[k].name,
            c->matched, c->injected, c->dropped, c->failed + c->ticks_failed);
  }
  if (t->encoder)
    fprintf(stderr, "; encoder %s: %" PRIu64 " encoded, %" PRIu64 " skipped, %"
            PRIu64 " rejected, %" PRIu64 " failed", t->o->encoder, n->encoded,
            n->enc_skipped, n->enc_rejected, n->enc_failed);
  fputc('\n', stderr);
}

static void remember_files(plugin_files *pf, const config *cfg,
                           const try_options *o)
{
  const config_plugin *d = config_find(cfg, o->decoder, PLUGIN_DECODER);
  const config_plugin *e = o->encoder ? config_find(cfg, o->encoder,
                                                    PLUGIN_ENCODER) : NULL;
  free(pf->decoder_file);
  free(pf->encoder_file);
  pf->decoder_file = d ? strdup(d->filename) : NULL;
  pf->encoder_file = e ? strdup(e->filename) : NULL;
  pf->loaded(pf->ud);
}

static bool filters_failed(const trial *t)
{
  for (size_t k = 0; k < t->stage.nfilters; k++)
    if (t->filter_counts[k].failed || t->filter_counts[k].ticks_failed)
      return true;
  return false;
}

int try_once(const try_options *o, const buf *stdin_copy, plugin_files *pf)
{
  trial t = {.o = o, .stdin_copy = stdin_copy, .flush_each = isatty(1)};
  sandbox_watchdog *wd = NULL;
  char err[2048];
  config cfg;
  int status = 1;

  if (config_load_plugins(o->config_path, registry_types, &cfg, err,
                          sizeof err) != 0) {
    fprintf(stderr, "lumberjit: %s\n", err);
    return 1;
  }
  if (pf) remember_files(pf, &cfg, o);
  if (o->expect && !(t.expect = try_expect_open(o->expect, o->update)))
    goto done;
  if (pipeline_start_watchdog(&cfg, &wd, err, sizeof err) != 0) {
    fprintf(stderr, "lumberjit: %s\n", err);
    goto done;
  }
  t.decoder = load_plugin(&t, &cfg, o->decoder, PLUGIN_DECODER, wd);
  if (!t.decoder) goto done;
  if (o->encoder) {
    t.encoder = load_plugin(&t, &cfg, o->encoder, PLUGIN_ENCODER, wd);
    if (!t.encoder) goto done;
  }
  if (load_filters(&t, &cfg, wd) != 0) goto done;
  status = 0;
  for (size_t i = 0; i < (o->nsamples ? o->nsamples : 1) && status == 0; i++)
    if (try_source(&t, o->nsamples ? o->samples[i] : "-") != 0) status = 1;
  if (status == 0) last_ticks(&t);
  fflush(stdout);
  if (status == 0) {
    print_summary(&t);
    /* With --expect, rejections and failures are what the golden file
     * says they should be. */
    if (t.expect)
      status = try_expect_finish(t.expect);
    else if (t.n.rejected || t.n.failed || t.n.enc_rejected ||
             t.n.enc_failed || filters_failed(&t))
      status = 1;
  }
done:
  try_expect_free(t.expect);
  filter_stage_free(&t.stage);
  free(t.stage.filters);
  free(t.filter_counts);
  sandbox_destroy(t.encoder);
  sandbox_destroy(t.decoder);
  sandbox_watchdog_stop(wd);
  msg_batch_free(&t.batch);
  buf_free(&t.out);
  buf_free(&t.encoded);
  buf_free(&t.prints);
  config_free(&cfg);
  return status;
}

int try_run(const try_options *o)
{
  if (o->watch) return try_watch(o);
  /* Without the loop running, the signal handles would hold SIGINT back:
   * closing them gives Ctrl-C its default action again. */
  signals_close();
  return try_once(o, NULL, NULL);
}
