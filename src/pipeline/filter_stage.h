/*
 * filter_stage.h - the filters between the decoders and the outputs: a
 * batch of messages goes through each filter, in the config's order.
 *
 * A filter takes the messages its matcher takes, in their order. Inline,
 * each is replaced where it stood by what the filter injects for it:
 * nothing drops it, several split it; what it injects has the taken
 * message's origin, and a failure (an error, a broken limit, -1) goes to
 * the stage's `failed` callback (the router dead-letters the message).
 * Tap, the messages go on as they were and what the filter injects follows
 * them; a failure is counted, the message going on all the same. Either
 * way only the filters after it see what a filter injected, and what its
 * timer_event injects (filter_stage_tick) goes through the filters after
 * it too. Each worker has a stage of its own instances (router.h); --try
 * has one (try.c).
 */
#ifndef LUMBERJIT_FILTER_STAGE_H
#define LUMBERJIT_FILTER_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "matcher.h"
#include "message.h"
#include "sandbox.h"

/* One filter's instance. */
typedef struct {
  const char *name;
  matcher *match;            /* owned */
  sandbox *sb;               /* owned */
  filter_mode mode;
} router_filter;

/* What a filter did. Inline: matched = messages it injected something for
 * + dropped + failed. */
typedef struct {
  uint64_t matched;          /* messages its matcher took */
  uint64_t injected;         /* messages it injected, timer_event's too */
  uint64_t dropped;          /* inline: taken, and replaced by nothing */
  uint64_t failed;           /* taken, and rejected or failed on */
  uint64_t ticks, ticks_failed; /* timer_event calls; those that failed */
} router_filter_counts;

/* A message an inline filter failed on (or all of a batch the stage had
 * no memory to filter): reason says why. */
typedef void (*filter_failed_fn)(void *ud, const router_filter *f,
                                 const msg *m, const char *reason);

typedef struct {
  router_filter *filters;
  size_t nfilters;
  router_filter_counts *counts; /* where it counts, one per filter */
  filter_failed_fn failed;
  void *failed_ud;
  /* The batch being made, the messages taken and their places, the
   * filter running and the next message to carry over. */
  msg_batch next;
  const msg **taken;
  uint32_t *taken_at;
  uint32_t cap;
  size_t filter;
  uint32_t carried, injected_before;
  const msg_batch *batch;
} filter_stage;

void filter_stage_init(filter_stage *s, router_filter *filters,
                       size_t nfilters, filter_failed_fn failed, void *ud);
/* The batch through the filters from `first` on. */
void filter_stage_run(filter_stage *s, msg_batch *batch, size_t first);
/* Filter f's timer_event(now_ns, shutdown): what it injects is appended to
 * batch, which then goes through the filters after f. */
void filter_stage_tick(filter_stage *s, size_t f, int64_t now_ns,
                       bool shutdown, msg_batch *batch);
/* Frees its memory, and the filters' matchers and sandboxes. */
void filter_stage_free(filter_stage *s);

#endif
