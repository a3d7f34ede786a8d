/* filter_stage.c - see filter_stage.h. */
#include "filter_stage.h"

#include <stdlib.h>

void filter_stage_init(filter_stage *s, router_filter *filters,
                       size_t nfilters, filter_failed_fn failed, void *ud)
{
  *s = (filter_stage){.filters = filters, .nfilters = nfilters,
                      .failed = failed, .failed_ud = ud};
}

static bool grow(filter_stage *s, uint32_t n)
{
  const msg **taken;
  uint32_t *taken_at;

  if (n <= s->cap) return true;
  taken = realloc(s->taken, n * sizeof *taken);
  if (taken) s->taken = taken;
  taken_at = realloc(s->taken_at, n * sizeof *taken_at);
  if (taken_at) s->taken_at = taken_at;
  if (!taken || !taken_at) return false;
  s->cap = n;
  return true;
}

/* Inline: the messages of the batch not taken, up to `end`, move to the
 * batch being made, in their places. */
static void carry_until(filter_stage *s, msg_batch *batch, uint32_t end)
{
  for (; s->carried < end; s->carried++)
    if (!msg_batch_push(&s->next, &batch->msgs[s->carried]))
      s->failed(s->failed_ud, &s->filters[s->filter],
                &batch->msgs[s->carried], "out of memory");
}

static bool filter_begin(void *ud, size_t i)
{
  filter_stage *s = ud;

  if (s->filters[s->filter].mode == FILTER_INLINE)
    carry_until(s, (msg_batch *)s->batch, s->taken_at[i]);
  s->injected_before = s->next.len;
  return true;
}

static void filter_end(void *ud, size_t i, const sandbox_result *res)
{
  filter_stage *s = ud;
  router_filter *f = &s->filters[s->filter];
  router_filter_counts *c = &s->counts[s->filter];
  uint32_t made = s->next.len - s->injected_before;

  if (f->mode == FILTER_INLINE) s->carried = s->taken_at[i] + 1;
  if (res->status != SANDBOX_OK) {
    c->failed++;
    if (f->mode == FILTER_INLINE)
      s->failed(s->failed_ud, f, s->taken[i], res->reason);
    return;
  }
  c->injected += made;
  c->dropped += f->mode == FILTER_INLINE && made == 0;
}

/* Filter k on the whole batch: inline, the batch is made anew; tap, what
 * it injects is added at the end. */
static void run_filter(filter_stage *s, size_t k, msg_batch *batch)
{
  router_filter *f = &s->filters[k];
  sandbox_each each = {filter_begin, filter_end, s};
  uint32_t n = batch->len, ntaken = 0;

  if (n == 0) return;
  if (!grow(s, n)) {
    /* Passing them on unfiltered could let through what it masks. */
    s->counts[k].failed += n;
    for (uint32_t i = 0; i < n; i++)
      s->failed(s->failed_ud, f, &batch->msgs[i], "out of memory");
    msg_batch_clear(batch);
    return;
  }
  for (uint32_t i = 0; i < n; i++)
    if (matcher_eval(f->match, &batch->msgs[i])) {
      s->taken_at[ntaken] = i;
      s->taken[ntaken++] = &batch->msgs[i];
    }
  s->counts[k].matched += ntaken;
  if (ntaken == 0) return;
  s->filter = k;
  s->carried = 0;
  s->batch = batch;
  msg_batch_clear(&s->next);
  sandbox_filter_many(f->sb, s->taken, ntaken, &s->next, &each);
  if (f->mode == FILTER_INLINE) {
    msg_batch swap = *batch;
    carry_until(s, batch, n);
    *batch = s->next;
    s->next = swap;
  } else {
    for (uint32_t j = 0; j < s->next.len; j++)
      if (!msg_batch_push(batch, &s->next.msgs[j]))
        s->failed(s->failed_ud, f, &s->next.msgs[j], "out of memory");
  }
  msg_batch_clear(&s->next);
  msg_batch_trim(&s->next, 64);
  s->batch = NULL;
}

void filter_stage_run(filter_stage *s, msg_batch *batch, size_t first)
{
  for (size_t k = first; k < s->nfilters; k++) run_filter(s, k, batch);
}

void filter_stage_tick(filter_stage *s, size_t f, int64_t now_ns,
                       bool shutdown, msg_batch *batch)
{
  router_filter_counts *c = &s->counts[f];
  msg_origin o = {.input = s->filters[f].name};
  uint32_t before = batch->len;
  sandbox_result res;

  sandbox_timer_event(s->filters[f].sb, now_ns, shutdown, &o, batch, &res);
  /* A filter without timer_event was not called: no tick to count. */
  c->ticks += res.status != SANDBOX_OK || sandbox_has_timer(s->filters[f].sb);
  c->ticks_failed += res.status != SANDBOX_OK;
  c->injected += batch->len - before;
  filter_stage_run(s, batch, f + 1);
}

void filter_stage_free(filter_stage *s)
{
  for (size_t i = 0; i < s->nfilters; i++) {
    sandbox_destroy(s->filters[i].sb);
    matcher_free(s->filters[i].match);
  }
  msg_batch_free(&s->next);
  free(s->taken);
  free(s->taken_at);
}
