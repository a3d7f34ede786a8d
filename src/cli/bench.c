/*
 * bench.c - `lumberjit bench` (bench.h): its options, the load it puts in
 * the config's place, and how a step runs.
 *
 * A step runs in this process: the config is loaded once; each step sets
 * the generators' rate and count (or makes the writers' files), builds a
 * pipeline from the config (pipeline_create), runs it to its end, reads
 * its figures, and tears it down (pipeline_destroy), as a reload will.
 * Running lumberjit again for each step would add a process's start to
 * every step and bring the figures back only through its log; here the
 * CPU time is read by thread around the run alone, the latency is the
 * outputs' own histogram, and the pipeline's probe (pipeline_set_probe)
 * gives each record its due time, so the histogram counts from the
 * schedule rather than from the read.
 *
 * The step's inputs are the load alone: the config's generator_inputs
 * (other inputs are left out: a listener or a tail would never end), one
 * generator in place of every input with --format (with the first
 * input's decoder), or with --write-files the config's inputs but its
 * generators. A generator step ends when the generators made their count
 * (rate x duration), or at --duration without a rate; a writers' step
 * once every line written was read and settled.
 */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "config.h"
#include "generator_input.h"
#include "line_generator.h"
#include "log.h"
#include "pipeline.h"
#include "registry.h"
#include "tail.h"

#define DEFAULT_DURATION_S 5
#define DEFAULT_COUNT 1000000
#define WATCH_MS 50
/* A writers' step whose records stopped coming this long after the
 * writers finished is stopped: what was not read counts as lost. */
#define STALL_MS 10000

static const char usage[] =
  "usage: lumberjit bench CONFIG [--rate R | --sweep R1,R2,...]\n"
  "                 [--duration S | --count N] [--max-p99 MS]\n"
  "                 [--format w1|syslog|nginx|TEMPLATE] [--write-files N]\n"
  "                 [--json FILE] [--csv FILE] [--plot FILE.svg]\n";

/* The plugins a step runs, and the load. */
typedef struct {
  config *cfg;
  config_plugin *plugins;    /* the config's, but the inputs left out */
  size_t nplugins;
  config_generator **gens;   /* the generators' settings in plugins */
  size_t ngens;
  config_plugin own_gen;     /* --format's generator */
  config_generator own_settings;
  char **files;              /* --write-files: each writer's path */
  const char *writers_format;
  char *state_dir;           /* the config's, each step a fresh one below */
} bench_load;

/* One step's run. */
typedef struct {
  bench_run *run;
  bench_load *load;
  bench_step *step;
  pipeline *pl;
  bench_writers *writers;
  uv_timer_t watch;
  double cpu0[BENCH_THREAD_KINDS], cpu1[BENCH_THREAD_KINDS];
  uint64_t t0_ns, t1_ns;
  bool interrupted, stop_asked;
  uint64_t last_read, last_change_ns;
  char error[512];
} step_run;

/* "50000", "50k", "1.5M": a whole number of lines (a second); -1 when it
 * is none. */
static int parse_amount(const char *s, uint64_t *out)
{
  char *end;
  double v = strtod(s, &end);

  if (end == s) return -1;
  if (*end == 'k' || *end == 'K') v *= 1e3, end++;
  else if (*end == 'm' || *end == 'M') v *= 1e6, end++;
  if (*end || !(v >= 1) || v > 1e9) return -1;
  *out = (uint64_t)llround(v);
  return 0;
}

static int parse_rates(bench_run *run, const char *list)
{
  char *copy = strdup(list), *save = NULL;

  if (!copy) return -1;
  for (char *tok = strtok_r(copy, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    uint64_t *r = realloc(run->rates, (run->nrates + 1) * sizeof *r);
    if (!r || parse_amount(tok, &r[run->nrates]) != 0) {
      if (r) run->rates = r;
      free(copy);
      return -1;
    }
    run->rates = r;
    run->nrates++;
  }
  free(copy);
  return run->nrates ? 0 : -1;
}

static int by_rate(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

  return (x > y) - (x < y);
}

static int usage_error(const char *why)
{
  if (why) fprintf(stderr, "lumberjit bench: %s\n", why);
  fputs(usage, stderr);
  return 2;
}

/* Reads the options into run; 2 on a usage error, else 0. */
static int parse_options(int argc, char **argv, bench_run *run)
{
  static const struct option longopts[] = {
    {"rate", required_argument, NULL, 'r'},
    {"sweep", required_argument, NULL, 's'},
    {"duration", required_argument, NULL, 'd'},
    {"count", required_argument, NULL, 'n'},
    {"json", required_argument, NULL, 'j'},
    {"csv", required_argument, NULL, 'v'},
    {"plot", required_argument, NULL, 'p'},
    {"max-p99", required_argument, NULL, 'm'},
    {"format", required_argument, NULL, 'f'},
    {"write-files", required_argument, NULL, 'w'},
    {NULL, 0, NULL, 0}
  };
  int opt;
  uint64_t n;
  char *end;

  while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (opt) {
    case 'r':
    case 's':
      if (run->nrates) return usage_error("one --rate or --sweep");
      if (parse_rates(run, optarg) != 0 || (opt == 'r' && run->nrates != 1))
        return usage_error("a rate is a number of lines a second (50000, 50k, 1.5M)");
      break;
    case 'd':
      run->duration_s = strtod(optarg, &end);
      if (*end || !(run->duration_s > 0))
        return usage_error("--duration takes seconds");
      break;
    case 'n':
      if (parse_amount(optarg, &run->count) != 0)
        return usage_error("--count takes a number of lines");
      break;
    case 'j': run->json_path = optarg; break;
    case 'v': run->csv_path = optarg; break;
    case 'p': run->plot_path = optarg; break;
    case 'm':
      run->max_p99_ms = strtod(optarg, &end);
      if (*end || !(run->max_p99_ms > 0))
        return usage_error("--max-p99 takes milliseconds");
      break;
    case 'f': run->format = optarg; break;
    case 'w':
      if (parse_amount(optarg, &n) != 0 || n > 1000)
        return usage_error("--write-files takes 1 to 1000 files");
      run->write_files = (unsigned)n;
      break;
    default: return usage_error(NULL);
    }
  }
  if (optind + 1 != argc) return usage_error("one CONFIG");
  if (run->duration_s && run->count)
    return usage_error("--duration or --count, not both");
  if (run->write_files && run->duration_s && !run->nrates)
    return usage_error("--write-files at full speed takes --count");
  run->config_path = argv[optind];
  /* A sweep goes up: the first step that fails ends it. */
  if (run->nrates > 1)
    qsort(run->rates, run->nrates, sizeof *run->rates, by_rate);
  if (!run->nrates) {
    /* One step, as fast as the pipeline takes the lines. */
    if (!(run->rates = calloc(1, sizeof *run->rates))) return 1;
    run->nrates = 1;
  }
  return 0;
}

/* ---- the load ---- */

static bool is_input(const config_plugin *p)
{
  return p->role == PLUGIN_INPUT;
}

static bool is_generator(const config_plugin *p)
{
  return p->type == &generator_input_type;
}

/* format's line_format, LINES_TEMPLATE for any other text; -1 with the
 * reason when a template's placeholder is unknown. */
static int format_of(const char *format, char *err, size_t errlen)
{
  for (int i = 0; line_format_names[i]; i++)
    if (i != LINES_TEMPLATE && strcmp(format, line_format_names[i]) == 0)
      return i;
  if (line_template_check(format, err, errlen) != 0) return -1;
  return LINES_TEMPLATE;
}

/* The writers' paths: the tail_input's first pattern with its '*' made
 * "bench1" ... "benchN", or its one file N times (W1: writers sharing a
 * file). */
static int writer_paths(bench_load *ld, unsigned n, const config_plugin *tail,
                        char *err, size_t errlen)
{
  const char *pattern = ((const config_tail *)tail->settings)->paths[0];
  const char *star = strchr(pattern, '*');

  if (strpbrk(star ? star + 1 : pattern, "*?[")) {
    snprintf(err, errlen, "--write-files: %s:%d: input '%s': its first path "
             "'%s' has more than one '*', or a '?' or '['; it needs one file "
             "or one '*'", tail->file, tail->line, tail->name, pattern);
    return -1;
  }
  if (!(ld->files = calloc(n + 1, sizeof *ld->files))) return -1;
  for (unsigned k = 0; k < n; k++) {
    size_t len = strlen(pattern) + 16;
    if (!(ld->files[k] = malloc(len))) return -1;
    if (star)
      snprintf(ld->files[k], len, "%.*sbench%u%s", (int)(star - pattern),
               pattern, k + 1, star + 1);
    else
      snprintf(ld->files[k], len, "%s", pattern);
  }
  return 0;
}

/* Chooses the step's plugins and its load; -1 with the reason in err. */
static int load_setup(bench_run *run, config *cfg, bench_load *ld, char *err,
                      size_t errlen)
{
  const config_plugin *first_input = NULL, *tail = NULL;
  int format = LINES_SYSLOG;

  ld->cfg = cfg;
  ld->state_dir = cfg->state_dir;
  if (run->format && (format = format_of(run->format, err, errlen)) < 0)
    return -1;
  if (!(ld->plugins = calloc(cfg->nplugins + 1, sizeof *ld->plugins)) ||
      !(ld->gens = calloc(cfg->nplugins + 1, sizeof *ld->gens))) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < cfg->nplugins; i++) {
    config_plugin *p = &cfg->plugins[i];
    bool keep;
    if (is_input(p) && !first_input) first_input = p;
    if (p->type == &tail_input_type && !tail) tail = p;
    if (!is_input(p)) keep = true;
    else if (run->write_files) keep = !is_generator(p);
    else keep = !run->format && is_generator(p);
    if (!keep) continue;
    ld->plugins[ld->nplugins++] = *p;
    if (is_input(p) && is_generator(p)) ld->gens[ld->ngens++] = p->settings;
  }
  if (run->write_files) {
    if (!tail) {
      snprintf(err, errlen, "--write-files: %s has no tail_input to read the "
               "files", run->config_path);
      return -1;
    }
    ld->writers_format = run->format ? run->format : "w1";
    return writer_paths(ld, run->write_files, tail, err, errlen);
  }
  if (run->format) {
    /* One generator in the inputs' place, decoding as the first did. */
    ld->own_settings = (config_generator){.format = format, .seed = 1,
        .template = format == LINES_TEMPLATE ? (char *)run->format : NULL};
    ld->own_gen = (config_plugin){
      .name = first_input ? first_input->name : "bench",
      .type = &generator_input_type, .role = PLUGIN_INPUT,
      .file = first_input ? first_input->file : cfg->file,
      .line = first_input ? first_input->line : 0,
      .settings = &ld->own_settings,
      .decoder = first_input ? first_input->decoder : NULL,
      .max_line = LINE_GENERATOR_MAX};
    ld->plugins[ld->nplugins++] = ld->own_gen;
    ld->gens[ld->ngens++] = &ld->own_settings;
  }
  if (!ld->ngens) {
    snprintf(err, errlen, "%s has no generator_input: --format puts one in "
             "place of its inputs, --write-files N writes the files its "
             "tail_input reads", run->config_path);
    return -1;
  }
  return 0;
}

static void load_free(bench_load *ld)
{
  for (char **f = ld->files; f && *f; f++) free(*f);
  free(ld->files);
  free(ld->plugins);
  free(ld->gens);
}

/* The step's lines in all: rate x duration, --count, or (no rate) the
 * default count; 0: until --duration stops it. */
static uint64_t step_count(const bench_run *run, uint64_t rate)
{
  if (run->count) return run->count;
  if (rate) return (uint64_t)llround((double)rate *
                                     (run->duration_s ? run->duration_s
                                                      : DEFAULT_DURATION_S));
  return run->duration_s ? 0 : DEFAULT_COUNT;
}

/* Shares rate and count out over the generators, the first taking what
 * does not divide. */
static void set_generators(bench_load *ld, uint64_t rate, uint64_t count)
{
  for (size_t i = 0; i < ld->ngens; i++) {
    ld->gens[i]->rate = rate / ld->ngens + (i == 0 ? rate % ld->ngens : 0);
    ld->gens[i]->count = count / ld->ngens + (i == 0 ? count % ld->ngens : 0);
  }
}

/* ---- a step ---- */

static uint64_t due_of(void *ud, const input *in, uint64_t position)
{
  step_run *s = ud;

  if (s->writers) return bench_writers_due(s->writers, in->path, position);
  return generator_input_due_us((input *)in, position);
}

static void on_started(void *ud)
{
  step_run *s = ud;
  bench_load *ld = s->load;

  bench_thread_cpu(s->cpu0);
  s->t0_ns = s->last_change_ns = uv_hrtime();
  if (!ld->files) return;
  s->writers = bench_writers_start(ld->files, s->run->write_files,
                                   ld->writers_format, s->step->generated,
                                   (uint64_t)s->step->offered, s->error,
                                   sizeof s->error);
  if (!s->writers) pipeline_request_stop(s->pl);
}

static void on_stopping(void *ud, const char *why)
{
  step_run *s = ud;

  if (why) s->interrupted = true; /* a signal: the sweep ends too */
}

static void on_drained(void *ud)
{
  step_run *s = ud;

  bench_thread_cpu(s->cpu1);
  s->t1_ns = uv_hrtime();
}

/* Every record read is settled at every output. */
static bool settled(const pipeline_stats *st, uint64_t *read)
{
  *read = 0;
  for (size_t i = 0; i < st->ninputs; i++) *read += st->inputs[i].records;
  for (size_t i = 0; i < st->noutputs; i++)
    if (st->outputs[i].queued_records ||
        st->outputs[i].matched > st->outputs[i].delivered +
                                 st->outputs[i].failed + st->outputs[i].skipped)
      return false;
  return true;
}

/* What ends a step that does not end by itself: --duration without a
 * rate; the writers' lines all read and settled (or no more coming). */
static void on_watch(uv_timer_t *t)
{
  step_run *s = t->data;
  uint64_t now = uv_hrtime(), read;
  bool done;

  if (s->stop_asked || !s->t0_ns) return;
  if (!s->load->files) {
    /* A generator with a count ends by itself. */
    if (s->step->generated) return;
    done = (double)(now - s->t0_ns) / 1e9 >= s->run->duration_s;
  } else {
    done = settled(pipeline_snapshot(s->pl), &read);
    if (read != s->last_read) {
      s->last_read = read;
      s->last_change_ns = now;
    }
    if (!s->writers || !bench_writers_done(s->writers)) return;
    done = (done && read >= bench_writers_written(s->writers)) ||
           now - s->last_change_ns > (uint64_t)STALL_MS * 1000000;
  }
  if (!done) return;
  s->stop_asked = true;
  pipeline_request_stop(s->pl);
}

static uint64_t sub(uint64_t a, uint64_t b)
{
  return a > b ? a - b : 0;
}

/* The step's figures, from the pipeline's counters at its end. */
static void measure(step_run *s, const pipeline_stats *st)
{
  bench_step *step = s->step;
  uint64_t read = 0, unsettled = 0;
  double secs = (double)(s->t1_ns - s->t0_ns) / 1e9, worst = -1;

  for (size_t i = 0; i < st->ninputs; i++) read += st->inputs[i].records;
  /* Without a count (--duration at full speed), what was made was read:
   * the generator hands each line on as it makes it. */
  if (!s->load->files && !step->generated) step->generated = read;
  for (size_t i = 0; i < st->noutputs; i++) {
    const pipeline_output_stats *o = &st->outputs[i];
    step->delivered += o->delivered;
    step->failed += o->failed;
    unsettled += sub(o->matched, o->delivered + o->failed + o->skipped);
    if (o->timed && o->latency_ms[2] > worst) {
      worst = o->latency_ms[2];
      memcpy(step->latency_ms, o->latency_ms, sizeof step->latency_ms);
    }
  }
  step->dead_lettered = st->dead_letters;
  step->lost = sub(step->generated, read) + unsettled + st->dead_letters_lost;
  step->seconds = secs > 0 ? secs : 1e-9;
  step->achieved = (double)read / step->seconds;
  step->latency_from = step->offered > 0 ? "due"
                       : s->load->files   ? "written" : "read";
  for (int k = 0; k < BENCH_THREAD_KINDS; k++)
    step->cpu[k] = s->cpu1[k] > s->cpu0[k] ? s->cpu1[k] - s->cpu0[k] : 0;
  step->peak_rss_mib = bench_peak_rss_mib();
  step->passed = step->status == 0 && step->lost == 0 &&
                 (!s->run->max_p99_ms ||
                  step->latency_ms[2] <= s->run->max_p99_ms) &&
                 (!step->offered ||
                  step->achieved >= BENCH_RATE_TOLERANCE * step->offered);
}

/* Removes a step's state directory and the files in it. */
static void remove_dir(const char *path)
{
  DIR *d = opendir(path);
  struct dirent *e;
  char file[4096];

  if (!d) return;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      if (snprintf(file, sizeof file, "%s/%s", path, e->d_name) <
          (int)sizeof file)
        unlink(file);
    }
  closedir(d);
  rmdir(path);
}

/* The writers' files start empty, and the checkpoints fresh: offsets a
 * step before kept (of a file whose inode the new one reuses) would skip
 * lines. */
static int prepare_files(bench_load *ld, char *state, size_t len, char *err,
                         size_t errlen)
{
  for (unsigned k = 0; ld->files[k]; k++) {
    FILE *f;
    unlink(ld->files[k]);
    if (!(f = fopen(ld->files[k], "w"))) {
      snprintf(err, errlen, "--write-files: cannot create %s: %s",
               ld->files[k], strerror(errno));
      return -1;
    }
    fclose(f);
  }
  if (!ld->state_dir) return 0;
  snprintf(state, len, "%s/bench-XXXXXX", ld->state_dir);
  if (!mkdtemp(state)) {
    snprintf(err, errlen, "cannot make a directory in state_dir %s: %s",
             ld->state_dir, strerror(errno));
    return -1;
  }
  ld->cfg->state_dir = state;
  return 0;
}

/* Runs one step at `rate` (0: as fast as taken); -1 with the reason in
 * err when the pipeline could not be built or the load not started. */
static int run_step(bench_run *run, bench_load *ld, bench_step *step,
                    uint64_t rate, bool *interrupted, char *err, size_t errlen)
{
  config *cfg = ld->cfg;
  config_plugin *plugins = cfg->plugins;
  size_t nplugins = cfg->nplugins;
  step_run s = {.run = run, .load = ld, .step = step};
  pipeline_hooks hooks = {on_started, on_stopping, NULL, &s};
  pipeline_probe probe = {due_of, on_drained, &s};
  char state[4096];
  double writers_cpu = 0;
  int rc = 0;

  *step = (bench_step){.offered = (double)rate,
                       .generated = step_count(run, rate)};
  if (ld->files) {
    if (prepare_files(ld, state, sizeof state, err, errlen) != 0) return -1;
  } else {
    set_generators(ld, rate, step->generated);
  }
  bench_reset_peak_rss();
  cfg->plugins = ld->plugins;
  cfg->nplugins = ld->nplugins;
  s.pl = pipeline_create(cfg, uv_default_loop(), err, errlen);
  cfg->plugins = plugins;
  cfg->nplugins = nplugins;
  if (!s.pl) rc = -1;
  if (rc == 0) {
    pipeline_set_hooks(s.pl, &hooks);
    pipeline_set_probe(s.pl, &probe);
    uv_timer_init(uv_default_loop(), &s.watch);
    s.watch.data = &s;
    uv_timer_start(&s.watch, on_watch, WATCH_MS, WATCH_MS);
    /* It must not keep the loop running: the pipeline's work does. */
    uv_unref((uv_handle_t *)&s.watch);
    step->status = pipeline_run(s.pl);
    if (s.writers) {
      if (bench_writers_stop(s.writers, &step->generated, &writers_cpu,
                             s.error, sizeof s.error) != 0)
        step->status = 1;
      s.writers = NULL;
    }
    measure(&s, pipeline_snapshot(s.pl));
    step->cpu[BENCH_WRITERS] = writers_cpu;
    uv_close((uv_handle_t *)&s.watch, NULL);
    if (pipeline_destroy(s.pl) != 0) step->status = 1;
    uv_run(uv_default_loop(), UV_RUN_NOWAIT); /* the watch's close */
    if (s.error[0]) {
      snprintf(err, errlen, "%s", s.error);
      rc = -1;
    }
  }
  if (ld->files && ld->state_dir) {
    remove_dir(state);
    cfg->state_dir = ld->state_dir;
  }
  *interrupted = s.interrupted;
  return rc;
}

static int write_files(const bench_run *run)
{
  char err[1024];
  int rc = 0;

  if (run->json_path && bench_write_json(run, run->json_path, err, sizeof err) != 0)
    rc = -1, fprintf(stderr, "lumberjit bench: %s\n", err);
  if (run->csv_path && bench_write_csv(run, run->csv_path, err, sizeof err) != 0)
    rc = -1, fprintf(stderr, "lumberjit bench: %s\n", err);
  if (run->plot_path && bench_write_plot(run, run->plot_path, err, sizeof err) != 0)
    rc = -1, fprintf(stderr, "lumberjit bench: %s\n", err);
  return rc;
}

/* The steps, in the order given, until one fails (a sweep). */
static int run_steps(bench_run *run, bench_load *ld)
{
  char err[2048];
  int status = 0;

  for (size_t i = 0; i < run->nrates; i++) {
    bench_step *step = &run->steps[run->nsteps];
    bool interrupted = false;
    if (run_step(run, ld, step, run->rates[i], &interrupted, err,
                 sizeof err) != 0) {
      fprintf(stderr, "lumberjit bench: %s\n", err);
      return 1;
    }
    run->nsteps++;
    if (step->status != 0 || step->lost) status = 1;
    if (step->passed && step->offered > run->sustainable)
      run->sustainable = step->offered;
    if (!step->passed || interrupted) break;
  }
  return status;
}

int bench_main(int argc, char **argv)
{
  bench_run run = {0};
  bench_load ld = {0};
  config cfg;
  char err[2048];
  int status = parse_options(argc, argv, &run);

  if (status != 0) {
    free(run.rates);
    return status;
  }
  if (config_load(run.config_path, registry_types, &cfg, err, sizeof err) != 0) {
    fprintf(stderr, "lumberjit: %s\n", err);
    free(run.rates);
    return 1;
  }
  /* The table is the output: a step's summary would bury it. */
  log_set_level(cfg.log_level < LOG_LEVEL_WARNING ? (log_level)cfg.log_level
                                                  : LOG_LEVEL_WARNING);
  if (load_setup(&run, &cfg, &ld, err, sizeof err) != 0) {
    fprintf(stderr, "lumberjit bench: %s\n", err);
    status = 1;
  } else if (!(run.steps = calloc(run.nrates, sizeof *run.steps))) {
    status = 1;
  } else {
    status = run_steps(&run, &ld);
    if (run.nsteps) {
      bench_print_table(&run, stdout);
      if (write_files(&run) != 0) status = 1;
    }
  }
  load_free(&ld);
  config_free(&cfg);
  free(run.steps);
  free(run.rates);
  return status;
}
