/*
 * router.h - the path of the records: decode them, pass the messages
 * through the filters in the config's order, match each message against
 * every output's matcher, encode it for each output that wants it, and
 * queue the encoded record on that output's sink. Whatever fails on the
 * way goes to the dead-letter path with its reason. Records go in batches,
 * a call into each plugin per batch (sandbox_batch.c says why).
 * (filter_stage.h says what a filter does to a batch; an inline filter's
 * failures are dead-lettered here).
 *
 * A router owns the sandboxes and the message batch it uses, and only
 * queues onto sinks: each worker thread (worker.h) owns one, with its own
 * decoder and encoder instances, queueing onto collector sinks.
 */
#ifndef LUMBERJIT_ROUTER_H
#define LUMBERJIT_ROUTER_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "dead_letter.h"
#include "filter_stage.h"
#include "matcher.h"
#include "message.h"
#include "output.h"
#include "plugin.h"
#include "sandbox.h"

typedef struct router_output {
  const char *name;          /* the output's, for dead letters */
  const char *encoder_name;
  bool newline;              /* records end with "\n" */
  matcher *match;            /* owned */
  sandbox *encoder;          /* owned; NULL: the payload as it is */
  output_sink *sink;
  /* Each record's head, made here where the message is (plugin.h);
   * route NULL: none. */
  const output_route *route;
  void *route_state;         /* owned */
} router_output;

typedef struct {
  const char *name;          /* the input's */
  size_t max_line;
  long_line_rule long_lines;
  sandbox *decoder;          /* owned; NULL: each record is a payload */
  const char *decoder_name;
  const char *path_field;    /* field taking the file read; NULL: none */
  const char *sender_field;  /* field taking the sender's address */
  const char *listener_field; /* field taking the input's name */
} router_input;

typedef struct {
  uint64_t matched;          /* messages its matcher took */
  uint64_t failed, skipped;  /* by the encoder */
} router_output_counts;

/* What routing counted, per batch of records from one input: whoever owns
 * the batch adds it up (worker.h: the loop thread, as each job returns, so
 * the totals can be read while the workers run). */
typedef struct {
  uint64_t records, overlong; /* of the input; overlong: lines cut */
  uint64_t dead;             /* the input's records dead-lettered */
  uint64_t dead_pieces;      /* the pieces of its long lines dead-lettered
                                (long_lines = dead_letter; dead counts
                                each such line once) */
  uint64_t messages;         /* made of its records (by its decoder) */
  uint64_t empty;            /* records its decoder made no message of */
  uint64_t truncated;        /* pieces of long lines dropped (truncate) */
  uint64_t unrouted;         /* messages no output matched */
  router_output_counts *outputs; /* one per output */
  router_filter_counts *filters; /* one per filter */
} router_counts;

/* Records decoded in one batch (sandbox_decode_many), and the most
 * messages a batch gathers before they are routed. */
#define ROUTER_BATCH 64

typedef struct {
  router_output *outputs;
  size_t noutputs;
  filter_stage stage;        /* its filters' instances */
  dead_letter *dl;
  router_counts *counts;     /* where router_record counts */
  msg_batch batch;           /* messages waiting to be routed */
  msg plain;                 /* a record without a decoder, being made */
  int64_t now_ns;            /* such records' Timestamp, read once a batch */
  /* Records waiting for their input's decoder, with their origins. */
  msg_origin waiting[ROUTER_BATCH];
  size_t nwaiting;
  router_input *waiting_input;
  uint32_t decoded;          /* messages of the records decoded so far */
  /* Routing: the messages chosen for one output, which of the batch some
   * output took, and the delivery under way (output, where its record
   * begins, its head's length). */
  const msg **chosen;
  bool *matched;
  uint32_t choice_cap;
  size_t out, start, head;
} router;

void router_init(router *r, router_output *outputs, size_t noutputs,
                 router_filter *filters, size_t nfilters, dead_letter *dl);
/* A piece of an overlong line: see router_piece_goes_on. */
bool router_long_piece_goes_on(const router_input *ri, router_counts *c,
                               dead_letter *dl, const msg_origin *o,
                               unsigned piece);
/* Counts record piece `piece` of input ri in c (see router_record) and
 * says whether it goes on to be routed: false for a piece that
 * ri->long_lines truncates or dead-letters (to dl), which it did. Inline:
 * a whole line (piece 0), nearly every record, is one count. */
static inline bool router_piece_goes_on(const router_input *ri,
                                        router_counts *c, dead_letter *dl,
                                        const msg_origin *o, unsigned piece)
{
  if (piece == 0) {
    c->records++;
    return true;
  }
  return router_long_piece_goes_on(ri, c, dl, o, piece);
}
/* One record of input ri; piece is non-zero for the pieces of a line
 * longer than max_line, which ri->long_lines disposes of. Records wait to
 * be decoded and routed in batches: o's bytes must stay until
 * router_flush, which sends what waits on its way. */
void router_record(router *r, router_input *ri, const msg_origin *o,
                   unsigned piece);
void router_flush(router *r);
/* Filter f's timer_event(now_ns, shutdown): what it injects goes through
 * the filters after f and to the outputs. */
void router_tick(router *r, size_t f, int64_t now_ns, bool shutdown);
/* Frees the batches, the outputs' matchers and encoders, and the
 * filters' matchers and sandboxes. */
void router_free(router *r);
void router_input_free(router_input *ri);

#endif
