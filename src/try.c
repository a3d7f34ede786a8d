/*
 * try.c - the --try mode (try.h).
 *
 * A run loads the config anew, makes the decoder's (and the encoder's)
 * sandbox as the pipeline makes them, hands it the samples line by line
 * and prints what came of each. --watch runs that inside a libuv loop: a
 * fs_poll handle per file the run used, and a change arms a short timer
 * before the next run, since an editor's save is several writes or a
 * write and a rename.
 *
 * The plugins keep their limits but not max_failures: a parser that fails
 * on ten lines in a row would stop, and its author would see nothing of
 * the lines after them.
 */
#include "try.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "buf.h"
#include "config.h"
#include "log.h"
#include "message_text.h"
#include "pipeline.h"
#include "signals.h"

#define TRY_POLL_MS 250
#define TRY_SETTLE_MS 100
/* The most failures in a row a config may allow (config_plugins.c). */
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
  buf prints;             /* print() lines of the call that runs, each "\n"-ended */
  bool flush_each;        /* stdout is a terminal: show each line at once */
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

static bool put(buf *b, const char *s) { return buf_append(b, s, strlen(s)); }

static void write_out(trial *t)
{
  fwrite(t->out.data, 1, t->out.len, stdout);
  buf_clear(&t->out);
  if (t->flush_each) fflush(stdout);
}

/* The runtime's log: a plugin's print() line is kept to be shown with the
 * line that made it; the rest goes to stderr as in a normal run. */
static void on_sandbox_log(void *ud, const char *line)
{
  trial *t = ud;
  const char *text = strstr(line, "\" print: ");

  if (strncmp(line, "sandbox \"", 9) != 0 || !text) {
    log_sandbox_line(NULL, line);
    return;
  }
  put(&t->prints, text + 9);
  put(&t->prints, "\n");
}

/* Appends the kept print() lines, each after `label`. */
static void put_prints(trial *t, const char *label)
{
  const char *line = t->prints.data, *end = line + t->prints.len;

  while (line < end) {
    const char *nl = memchr(line, '\n', (size_t)(end - line));
    put(&t->out, label);
    buf_append(&t->out, line, (size_t)(nl - line) + 1);
    line = nl + 1;
  }
  buf_clear(&t->prints);
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
    put(&t->out, "  encoded: ");
    buf_append(&t->out, t->encoded.data, len);
    put(&t->out, "\n");
    return;
  case SANDBOX_SKIPPED:
    t->n.enc_skipped++;
    put(&t->out, "  encoder skipped it\n");
    return;
  case SANDBOX_REJECTED:
    t->n.enc_rejected++;
    put(&t->out, "  encoder rejected it: ");
    break;
  case SANDBOX_FAILED:
  case SANDBOX_STOPPED:
    t->n.enc_failed++;
    put(&t->out, "  encoder failed: ");
    break;
  }
  put(&t->out, res.reason);
  put(&t->out, "\n");
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
  sandbox_decode(t->decoder, &origin, &t->batch, &res);
  put(&t->out, source);
  snprintf(head, sizeof head, ":%" PRIu64 ": ", lineno);
  put(&t->out, head);
  if (res.status != SANDBOX_OK) {
    bool rejected = res.status == SANDBOX_REJECTED;
    *(rejected ? &t->n.rejected : &t->n.failed) += 1;
    put(&t->out, rejected ? "rejected: " : "failed: ");
    put(&t->out, res.reason);
    put(&t->out, "\n");
    put_prints(t, "  print: ");
  } else {
    uint32_t n = t->batch.len;
    snprintf(head, sizeof head, "%" PRIu32 " message%s\n", n, n == 1 ? "" : "s");
    put(&t->out, head);
    put_prints(t, "  print: ");
    t->n.messages += n;
    for (uint32_t k = 0; k < n; k++) {
      if (n > 1) {
        snprintf(head, sizeof head, "  -- message %" PRIu32 " of %" PRIu32 "\n",
                 k + 1, n);
        put(&t->out, head);
      }
      message_text(&t->out, &t->batch.msgs[k], "  ");
      if (t->encoder) encode_one(t, &t->batch.msgs[k]);
    }
  }
  write_out(t);
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
  sb = pipeline_plugin_sandbox(cfg, &copy, wd, on_sandbox_log, t, err,
                               sizeof err);
  if (!sb) fprintf(stderr, "lumberjit: %s\n", err);
  return sb;
}

static void print_summary(const trial *t)
{
  const try_counts *n = &t->n;

  fprintf(stderr, "lumberjit: --try %s: %" PRIu64 " lines, %" PRIu64
          " messages, %" PRIu64 " rejected, %" PRIu64 " failed", t->o->decoder,
          n->lines, n->messages, n->rejected, n->failed);
  if (t->encoder)
    fprintf(stderr, "; encoder %s: %" PRIu64 " encoded, %" PRIu64 " skipped, %"
            PRIu64 " rejected, %" PRIu64 " failed", t->o->encoder, n->encoded,
            n->enc_skipped, n->enc_rejected, n->enc_failed);
  fputc('\n', stderr);
}

/* The plugins' files of the last config that loaded, for --watch. */
typedef struct {
  char *decoder_file, *encoder_file;
} plugin_files;

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
}

/* One run over every sample; returns its exit status. */
static int run_once(const try_options *o, const buf *stdin_copy,
                    plugin_files *pf)
{
  trial t = {.o = o, .stdin_copy = stdin_copy, .flush_each = isatty(1)};
  sandbox_watchdog *wd = NULL;
  char err[2048];
  config cfg;
  int status = 1;

  if (config_load_plugins(o->config_path, &cfg, err, sizeof err) != 0) {
    fprintf(stderr, "lumberjit: %s\n", err);
    return 1;
  }
  if (pf) remember_files(pf, &cfg, o);
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
  status = 0;
  for (size_t i = 0; i < (o->nsamples ? o->nsamples : 1) && status == 0; i++)
    if (try_source(&t, o->nsamples ? o->samples[i] : "-") != 0) status = 1;
  fflush(stdout);
  if (status == 0) {
    print_summary(&t);
    if (t.n.rejected || t.n.failed || t.n.enc_rejected || t.n.enc_failed)
      status = 1;
  }
done:
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

/* --watch: the files of the last run, polled, and the settle timer. */
typedef struct watcher watcher;

typedef struct {
  uv_fs_poll_t handle;
  watcher *w;
  char *path;
} watched_file;

struct watcher {
  const try_options *o;
  const buf *stdin_copy;
  plugin_files files;
  watched_file **polls;
  size_t npolls;
  uv_timer_t settle;
  char *changed;       /* the path whose change armed the timer */
  unsigned runs;
  int status;          /* the last run's */
  bool stopping;
};

static void run_again(uv_timer_t *timer);

static void free_watched(uv_handle_t *h)
{
  watched_file *f = h->data;
  free(f->path);
  free(f);
}

static void stop_polling(watcher *w)
{
  for (size_t i = 0; i < w->npolls; i++)
    uv_close((uv_handle_t *)&w->polls[i]->handle, free_watched);
  free(w->polls);
  w->polls = NULL;
  w->npolls = 0;
}

static void on_change(uv_fs_poll_t *h, int status, const uv_stat_t *prev,
                      const uv_stat_t *curr)
{
  watched_file *f = h->data;
  watcher *w = f->w;
  (void)curr;
  /* A file missing at the start is reported once as missing: that is no
   * change, it is the run's error already printed. */
  if (status < 0 && prev->st_ino == 0) return;
  if (!w->changed) w->changed = strdup(f->path);
  uv_timer_start(&w->settle, run_again, TRY_SETTLE_MS, 0);
}

static void poll_path(watcher *w, const char *path)
{
  watched_file *f = calloc(1, sizeof *f), **grown;

  grown = realloc(w->polls, (w->npolls + 1) * sizeof *grown);
  if (grown) w->polls = grown;
  if (f) f->path = strdup(path);
  if (!f || !f->path || !grown) {
    if (f) free(f->path);
    free(f);
    fprintf(stderr, "lumberjit: --watch: out of memory; %s is not watched\n",
            path);
    return;
  }
  f->w = w;
  uv_fs_poll_init(w->settle.loop, &f->handle);
  f->handle.data = f;
  w->polls[w->npolls++] = f;
  uv_fs_poll_start(&f->handle, on_change, path, TRY_POLL_MS);
}

/* Polls the config, the plugins' files and the sample files. */
static void start_polling(watcher *w)
{
  poll_path(w, w->o->config_path);
  if (w->files.decoder_file) poll_path(w, w->files.decoder_file);
  if (w->files.encoder_file) poll_path(w, w->files.encoder_file);
  for (size_t i = 0; i < w->o->nsamples; i++)
    if (strcmp(w->o->samples[i], "-") != 0) poll_path(w, w->o->samples[i]);
  fprintf(stderr, "lumberjit: --watch: run %u done; waiting for a change of "
          "%s, the plugins' files or the samples (Ctrl-C stops)\n", w->runs,
          w->o->config_path);
}

static void run_again(uv_timer_t *timer)
{
  watcher *w = timer->data;

  printf("== run %u: %s changed ==\n", ++w->runs,
         w->changed ? w->changed : "a file");
  fflush(stdout);
  free(w->changed);
  w->changed = NULL;
  /* The config may name other plugin files now. */
  stop_polling(w);
  w->status = run_once(w->o, w->stdin_copy, &w->files);
  start_polling(w);
}

static void stop_watching(void *ud, const char *signame)
{
  watcher *w = ud;
  (void)signame;
  if (w->stopping) return;
  w->stopping = true;
  stop_polling(w);
  uv_close((uv_handle_t *)&w->settle, NULL);
}

/* Standard input, read whole: every run reads it again. */
static int read_all(FILE *f, buf *b)
{
  char chunk[65536];
  size_t n;

  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    if (!buf_append(b, chunk, n)) return -1;
  return ferror(f) ? -1 : 0;
}

static bool reads_stdin(const try_options *o)
{
  if (o->nsamples == 0) return true;
  for (size_t i = 0; i < o->nsamples; i++)
    if (strcmp(o->samples[i], "-") == 0) return true;
  return false;
}

static int watch(const try_options *o)
{
  uv_loop_t *loop = uv_default_loop();
  buf stdin_copy = {0};
  watcher w = {.o = o, .stdin_copy = reads_stdin(o) ? &stdin_copy : NULL,
               .runs = 1};
  signals_handler sh = {.stop = stop_watching, .ud = &w};

  if (w.stdin_copy && read_all(stdin, &stdin_copy) != 0) {
    fprintf(stderr, "lumberjit: --try: cannot read standard input: %s\n",
            strerror(errno));
    buf_free(&stdin_copy);
    return 1;
  }
  uv_timer_init(loop, &w.settle);
  w.settle.data = &w;
  w.status = run_once(o, w.stdin_copy, &w.files);
  start_polling(&w);
  signals_set_handler(&sh);
  uv_run(loop, UV_RUN_DEFAULT);
  signals_set_handler(NULL);
  free(w.changed);
  free(w.files.decoder_file);
  free(w.files.encoder_file);
  buf_free(&stdin_copy);
  return w.status;
}

int try_run(const try_options *o)
{
  if (o->watch) return watch(o);
  /* Without the loop running, the signal handles would hold SIGINT back:
   * closing them gives Ctrl-C its default action again. */
  signals_close();
  return run_once(o, NULL, NULL);
}
