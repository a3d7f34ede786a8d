/*
 * sandbox.h - the sandbox runtime: one LuaJIT state per plugin instance,
 * with limits, a restricted environment and Heka's plugin API.
 *
 * This is the collector's whole contract with the runtime; the runtime
 * knows nothing of inputs, routing or outputs. A sandbox is owned by the
 * thread that created it: every call on it must come from that thread
 * (the watchdog measures that thread's CPU clock). Sandboxes on different
 * threads share nothing but the watchdog.
 *
 * What each limit counts (also in README.md, "Sandbox limits"):
 * - cpu_limit_ms: CPU time of the owning thread during one call, sampled by
 *   the watchdog every watchdog interval. A call is stopped at the first
 *   sample past the limit, so it may overrun by up to one interval. This is
 *   the limit that stops any runaway code, compiled loops included, and it
 *   costs nothing until it fires.
 * - instruction_limit (off by default): Lua VM instructions of one call,
 *   counted in steps of SANDBOX_HOOK_STEP by a count hook. An armed hook
 *   makes compiled loops leave their traces at every iteration, so the hook
 *   is armed only once a call has run for one watchdog interval: the
 *   instructions of a call that ends within its first interval are not
 *   counted, every instruction after that is, and that remainder of the
 *   call runs at interpreter speed.
 * - memory_limit: bytes held by the state's allocator (the whole Lua heap,
 *   LPeg and cjson buffers included; JIT machine code is bounded apart, by
 *   mcode_limit_kb). A refused allocation fails the call even if the script
 *   catches the error.
 * - output_limit: bytes one call emits: injected messages' strings and
 *   numbers, inject_payload data, the returned string, print() output.
 * - input_limit: bytes of one record handed to a decoder call; a longer
 *   record is rejected before any Lua runs (a C call such as an LPeg match
 *   cannot be interrupted, so its input is what bounds it).
 */
#ifndef LUMBERJIT_SANDBOX_H
#define LUMBERJIT_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "message.h"

#define SANDBOX_HOOK_STEP 1000

typedef struct sandbox sandbox;
typedef struct sandbox_watchdog sandbox_watchdog;

/* A decoder makes messages of records; an encoder writes messages; a
 * filter reads a message and injects the messages that replace it, or
 * that it makes of what it saw (and, with timer_event, every interval). */
typedef enum { SANDBOX_DECODER, SANDBOX_ENCODER, SANDBOX_FILTER } sandbox_kind;

typedef struct {
  uint64_t instruction_limit; /* 0: none */
  uint64_t cpu_limit_ms;      /* 0: none */
  uint64_t memory_limit;      /* bytes; 0: none */
  uint64_t output_limit;      /* bytes per call; 0: none */
  uint64_t input_limit;       /* bytes per record; 0: none */
  uint64_t mcode_limit_kb;    /* JIT machine code per state */
  uint64_t max_failures;      /* failed calls in a row before the plugin stops */
  uint64_t restart_after_ms;  /* first wait before a stopped plugin restarts;
                                 doubles at each stop, up to 60 s */
  bool quiet_rebuilds;        /* a failed call whose state was rebuilt is
                                 not logged: the caller shows each failure
                                 with its record (--try) */
} sandbox_limits;

/* The defaults: no instruction limit, 100 ms, 8 MiB, 64 KiB out, 64 KiB
 * in, 2048 KiB of machine code, 10 failures in a row, restart after 1 s. */
void sandbox_limits_default(sandbox_limits *l);

/* Receives one line of the runtime's log: terminations, restarts, stops and
 * the plugins' print() output. */
typedef void (*sandbox_log_fn)(void *ud, const char *line);

typedef struct {
  const char *name;        /* plugin instance name, for messages */
  const char *filename;    /* the plugin's Lua file */
  sandbox_kind kind;
  const char *settings;    /* Lua source returning the table read_config reads */
  const char *module_dirs; /* ';'-separated directories require searches */
  sandbox_limits limits;
  sandbox_log_fn log;
  void *log_ud;
} sandbox_config;

typedef enum {
  SANDBOX_OK,       /* the call succeeded */
  SANDBOX_REJECTED, /* the script returned -1 (or the input was too large) */
  SANDBOX_SKIPPED,  /* an encoder returned -2 */
  SANDBOX_FAILED,   /* an error or a broken limit: the state was rebuilt,
                     * or the plugin stopped (sandbox_is_stopped) */
  SANDBOX_STOPPED   /* the plugin had stopped before; nothing ran */
} sandbox_status;

typedef enum {
  SANDBOX_LIMIT_NONE,
  SANDBOX_LIMIT_INSTRUCTIONS,
  SANDBOX_LIMIT_CPU,
  SANDBOX_LIMIT_MEMORY,
  SANDBOX_LIMIT_OUTPUT,
  SANDBOX_LIMIT_INPUT
} sandbox_limit;

typedef struct {
  sandbox_status status;
  sandbox_limit limit;   /* which limit broke, for SANDBOX_FAILED/REJECTED */
  char reason[512];      /* one line, for the dead-letter record */
} sandbox_result;

/* The size of an array indexed by sandbox_limit. */
#define SANDBOX_LIMITS (SANDBOX_LIMIT_INPUT + 1)

/* The CPU a call took, as a histogram: the upper bounds of its buckets, in
 * ns (the last bucket has none: +Inf). A batch's calls count in the bucket
 * of their average: the clock is read twice a batch, never per item. */
#define SANDBOX_CPU_BUCKETS 12
extern const uint64_t sandbox_cpu_bucket_ns[SANDBOX_CPU_BUCKETS - 1];

/* What a sandbox counted since it was created; the caller sums instances.
 * Reading them is a copy, cheap enough to do once a batch. */
typedef struct {
  uint64_t calls;          /* items that ran Lua, timer_events included */
  uint64_t rejected;       /* the script returned -1 (or a bad result) */
  uint64_t skipped;        /* an encoder returned -2 */
  uint64_t failed;         /* calls that failed: the sum of failures but
                              [SANDBOX_LIMIT_INPUT] */
  /* By cause: [SANDBOX_LIMIT_NONE] a Lua error, else the limit broken;
   * [SANDBOX_LIMIT_INPUT] counts records refused before any Lua ran. */
  uint64_t failures[SANDBOX_LIMITS];
  uint64_t stops;          /* times it stopped: max_failures in a row,
                              or a state that could not be rebuilt (or
                              restarted, which stops it again) */
  uint64_t restarts;       /* new states: rebuilt after a failed call, or
                              restarted after a stop */
  uint64_t cpu_ns;         /* the owning thread's CPU time in its batches
                              and timer_events */
  uint64_t cpu_calls[SANDBOX_CPU_BUCKETS]; /* calls by CPU per call (not
                              cumulative): sandbox_cpu_bucket_ns */
  size_t memory, memory_peak; /* bytes its allocator holds now; the most */
} sandbox_stats;

/* The watchdog is one thread that serves every sandbox given to it.
 * interval_ms is its sampling period (1 to 1000). */
sandbox_watchdog *sandbox_watchdog_start(unsigned interval_ms, char *err,
                                         size_t errlen);
void sandbox_watchdog_stop(sandbox_watchdog *wd);

/* Loads the plugin; NULL with a message in err when its file does not load
 * or lacks process_message. cfg's strings are copied. */
sandbox *sandbox_create(const sandbox_config *cfg, sandbox_watchdog *wd,
                        char *err, size_t errlen);
void sandbox_destroy(sandbox *sb);
/* A reload keeps an unchanged plugin's sandbox, its Lua state and all,
 * for the next pipeline, whose worker threads and watchdog are new:
 * sandbox_detach leaves the watchdog (before it stops), and
 * sandbox_attach binds the sandbox to the calling thread's CPU clock and
 * to wd (NULL: none); -1 when the thread has no CPU clock. */
void sandbox_detach(sandbox *sb);
int sandbox_attach(sandbox *sb, sandbox_watchdog *wd);

/* What a batch call tells its caller of each item, in the items' order.
 * begin (NULL: none) runs as item i is taken up, before any of its output:
 * false leaves the item out (and end is not called for it). end runs once
 * the item is done, with its result: a decoder's messages for record i are
 * then the last ones appended to its batch, an encoder's bytes the last
 * ones appended to its buffer (none unless the status is SANDBOX_OK). Both
 * run in C between the plugin's calls for two items: they must not call
 * into this sandbox. */
typedef struct {
  bool (*begin)(void *ud, size_t i);
  void (*end)(void *ud, size_t i, const sandbox_result *res);
  void *ud;
} sandbox_each;

/* Decoder calls: process_message(record) or process_record(length) for
 * each of the n records, in order, each with the limits of a call of its
 * own. Messages record i injects are appended to `out` with recs[i] as
 * their origin. Many records go through one call into Lua (sandbox_batch.c
 * says why); a failed one ends that call, and the rest go on in another. */
void sandbox_decode_many(sandbox *sb, const msg_origin *recs, size_t n,
                         msg_batch *out, const sandbox_each *each);
/* Encoder calls: process_message() reading each of the n messages, in
 * order, each with the limits of a call of its own; the encoded bytes are
 * appended to `out`. */
void sandbox_encode_many(sandbox *sb, const msg *const *msgs, size_t n,
                         buf *out, const sandbox_each *each);

/* Filter calls: process_message() reading each of the n messages, in
 * order, each with the limits of a call of its own; the messages it
 * injects for message i are appended to `out` with message i's origin.
 * A filter that returns -1 rejects the message, with its reason. */
void sandbox_filter_many(sandbox *sb, const msg *const *msgs, size_t n,
                         msg_batch *out, const sandbox_each *each);
/* Whether the filter defines timer_event. */
bool sandbox_has_timer(const sandbox *sb);
/* A filter's timer_event(ns, shutdown): one call, with the limits of a
 * call; the messages it injects are appended to `out` with `origin`.
 * shutdown: the last call, as the run ends. Nothing runs when it has no
 * timer_event (res says SANDBOX_OK). */
void sandbox_timer_event(sandbox *sb, int64_t ns, bool shutdown,
                         const msg_origin *origin, msg_batch *out,
                         sandbox_result *res);

/* One record or one message: the above for a batch of one. */
void sandbox_decode(sandbox *sb, const msg_origin *rec, msg_batch *out,
                    sandbox_result *res);
void sandbox_encode(sandbox *sb, const msg *m, buf *out, sandbox_result *res);

bool sandbox_is_stopped(const sandbox *sb);
void sandbox_get_stats(const sandbox *sb, sandbox_stats *out);
/* Adds s into sum, an instance into its plugin's total: counts and memory
 * add up; memory_peak is the largest instance's (memory_limit bounds each
 * instance, so that is the figure to hold against it). */
void sandbox_stats_add(sandbox_stats *sum, const sandbox_stats *s);
const char *sandbox_limit_name(sandbox_limit l);

#endif
