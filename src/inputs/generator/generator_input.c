/*
 * generator_input.c - the generator_input kind (generator_input.h).
 *
 * One source, fed from the loop: as fast as taken, an idle handle makes a
 * chunk of lines each loop iteration; with a rate, a timer wakes it when
 * the next line is due (at most once a millisecond, so a high rate costs
 * a thousand wake-ups a second, not one a line) and it makes what is due
 * by then. Line n is due at start + (n - 1) / rate: the schedule
 * (generator_input_due_us) is what lumberjit bench counts latency from. A
 * chunk goes to the worker as a read does, and the hold that follows (the
 * worker is behind, an output is full) stops the making until the
 * pipeline lets the source go on.
 */
#include "generator_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "input_host.h"
#include "line_generator.h"

/* Lines per chunk: about 500 KB of syslog lines, as much as a file read
 * hands on at once. */
#define CHUNK_LINES 2048

typedef struct {
  pl_source *src;
  line_generator lines;
  uint64_t count, rate;  /* config_generator's */
  uint64_t made;
  uint64_t start_us;     /* uv_hrtime when it started: the schedule's 0 */
  uv_idle_t idle;        /* rate 0 */
  uv_timer_t tick;       /* with a rate */
  bool handles_open;
  bool held, finished;
  char line[LINE_GENERATOR_MAX];
} generator;

static int generator_build(pl_input *pi, const config_plugin *p, char *err,
                           size_t errlen)
{
  const config_generator *cfg = p->settings;
  generator *g = calloc(1, sizeof *g);

  if (g) g->src = pl_source_new(pi);
  if (!g || !g->src) {
    free(g);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  pl_input_set_state(pi, g);
  line_generator_init(&g->lines, (line_format)cfg->format, cfg->template,
                      cfg->seed);
  g->count = cfg->count;
  g->rate = cfg->rate;
  return 0;
}

static void finish(generator *g)
{
  input *in = pl_source_reader(g->src);

  if (g->finished) return;
  g->finished = true;
  uv_idle_stop(&g->idle);
  uv_timer_stop(&g->tick);
  in->handler.finished(in->handler.ud, in, NULL);
}

/* Makes up to n lines as one chunk; the chunk's hand-over may hold the
 * generator (g->held). */
static void make_chunk(generator *g, uint64_t n)
{
  input *in = pl_source_reader(g->src);
  time_t now = time(NULL);

  for (uint64_t i = 0; i < n; i++) {
    size_t len = line_generator_next(&g->lines, g->line, now);
    in->handler.record(in->handler.ud, in, g->line, len, ++g->made, 0);
  }
  in->handler.chunk_done(in->handler.ud, in);
  if (g->count && g->made == g->count) finish(g);
}

static uint64_t left(const generator *g)
{
  return g->count ? g->count - g->made : UINT64_MAX;
}

static void on_idle(uv_idle_t *h)
{
  generator *g = h->data;
  uint64_t n = left(g);

  make_chunk(g, n < CHUNK_LINES ? n : CHUNK_LINES);
}

static void on_tick(uv_timer_t *h);

uint64_t generator_input_due_us(input *in, uint64_t seq)
{
  const generator *g = pl_input_state(pl_source_owner(pl_source_of(in)));

  if (!g->rate || seq == 0) return 0;
  /* In two parts, so that no product overflows in a long run. */
  return g->start_us + (seq - 1) / g->rate * 1000000 +
         (seq - 1) % g->rate * 1000000 / g->rate;
}

/* Wakes the generator when line made + 1 is due, a millisecond from now
 * at the soonest. */
static void wake_when_due(generator *g)
{
  uint64_t now_us = uv_hrtime() / 1000;
  uint64_t due_us = generator_input_due_us(pl_source_reader(g->src), g->made + 1);
  uint64_t ms = due_us > now_us ? (due_us - now_us + 999) / 1000 : 0;

  uv_timer_start(&g->tick, on_tick, ms ? ms : 1, 0);
}

/* What is due by now and not yet made goes, a chunk at a time, until the
 * generator is held; then it sleeps until the next line is due (or, held,
 * until generator_hold lets it go on). */
static void on_tick(uv_timer_t *h)
{
  generator *g = h->data;
  uint64_t elapsed = uv_hrtime() / 1000 - g->start_us;
  /* In two parts, so that no product overflows in a long run. */
  uint64_t due = elapsed / 1000000 * g->rate +
                 elapsed % 1000000 * g->rate / 1000000 + 1;

  if (g->count && due > g->count) due = g->count;
  while (!g->held && !g->finished && g->made < due) {
    uint64_t n = due - g->made;
    make_chunk(g, n < CHUNK_LINES ? n : CHUNK_LINES);
  }
  if (!g->held && !g->finished) wake_when_due(g);
}

static int generator_start(pl_input *pi, char *err, size_t errlen)
{
  generator *g = pl_input_state(pi);
  uv_loop_t *loop = pl_input_loop(pi);

  (void)err, (void)errlen;
  uv_idle_init(loop, &g->idle);
  uv_timer_init(loop, &g->tick);
  g->idle.data = g->tick.data = g;
  g->handles_open = true;
  /* Now, not the loop's cached time: building the pipeline took a while,
   * and the lines due since then would come at once. */
  g->start_us = uv_hrtime() / 1000;
  if (g->rate) uv_timer_start(&g->tick, on_tick, 0, 0);
  else uv_idle_start(&g->idle, on_idle);
  return 0;
}

static void generator_stop(pl_input *pi)
{
  generator *g = pl_input_state(pi);

  if (g->handles_open) finish(g);
}

static void generator_hold(pl_source *src, bool hold)
{
  generator *g = pl_input_state(pl_source_owner(src));

  bool was = g->held;

  g->held = hold;
  if (g->finished || was == hold) return;
  /* With a rate, what a hold delayed is due at once: it makes it now. */
  if (g->rate && hold) uv_timer_stop(&g->tick);
  else if (g->rate) uv_timer_start(&g->tick, on_tick, 0, 0);
  else if (hold) uv_idle_stop(&g->idle);
  else uv_idle_start(&g->idle, on_idle);
}

static void generator_source_finished(pl_input *pi, pl_source *src)
{
  (void)src;
  pl_input_done(pi);
}

static void generator_close_handles(pl_input *pi)
{
  generator *g = pl_input_state(pi);

  if (!g || !g->handles_open) return;
  g->handles_open = false;
  uv_close((uv_handle_t *)&g->idle, NULL);
  uv_close((uv_handle_t *)&g->tick, NULL);
}

static void generator_free(pl_input *pi)
{
  free(pl_input_state(pi));
  pl_input_set_state(pi, NULL);
}

const input_kind generator_input_kind = {
  .build = generator_build, .start = generator_start, .stop = generator_stop,
  .source_finished = generator_source_finished,
  .close_handles = generator_close_handles, .free = generator_free,
  .hold = generator_hold,
};
