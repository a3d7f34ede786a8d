/*
 * sandbox_internal.h - what the sandbox_*.c files share and nobody else
 * sees: the sandbox struct and the hand-offs between lifecycle (sandbox.c),
 * allocator (sandbox_alloc.c), environment (sandbox_env.c), plugin API
 * (sandbox_api.c) and watchdog (sandbox_watchdog.c).
 *
 * Threads: everything here is touched by the owning thread, except the
 * fields marked "watchdog", which the watchdog thread reads or writes too.
 * The hook is armed and disarmed under hook_lock by either thread.
 */
#ifndef LUMBERJIT_SANDBOX_INTERNAL_H
#define LUMBERJIT_SANDBOX_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <lua.h>

#include "sandbox.h"

/* The registry field holding the table read_config reads. */
#define SANDBOX_SETTINGS_KEY "lumberjit.settings"

typedef struct {
  size_t used, peak, limit;
  size_t refused_size; /* the request refused in this call, 0 if none */
  bool enforce;        /* in a protected call: the limit applies */
} sandbox_mem;

/* Fields tables with more keys than this are sorted after they are added. */
#define SANDBOX_FIELD_ORDER_MAX 64

/* The record a decoder's process_record reads with record_byte (see
 * sandbox_record.c); len is 0 outside a call. */
typedef struct {
  const uint8_t *bytes;
  int32_t len;
} sandbox_record;

/* The batch a call runs (sandbox_batch.c): items i.. of n, the records of
 * a decoder or the messages of an encoder. */
typedef struct {
  const msg_origin *recs;   /* decoder */
  const msg *const *msgs;   /* encoder, filter */
  size_t n, i;
  bool running;             /* item i has begun and not ended */
  size_t first;             /* where item i's output begins: a message of
                               the batch, or a byte of out */
  const sandbox_each *each;
  sandbox_result res;       /* item i's */
} sandbox_run;

struct sandbox {
  char *name, *filename, *settings, *module_dirs;
  sandbox_kind kind;
  sandbox_limits limits;
  sandbox_log_fn log;
  void *log_ud;

  lua_State *L;            /* NULL once stopped */
  bool by_position;        /* defines process_record: reads with record_byte */
  int entry_line;          /* where it is defined */
  bool loading;            /* running the plugin's top level */
  bool timer_call;         /* a failed call was timer_event's */
  sandbox_mem mem;
  sandbox_stats stats;
  uint32_t failures_in_row;
  uint64_t restart_wait_ms;  /* 0 while running; the wait of the last stop */
  uint64_t restart_at_ms;    /* CLOCK_MONOTONIC ms when a stopped one restarts */
  uint64_t restarted_at_ms;  /* when it last restarted */

  /* The call in progress. */
  sandbox_run run;
  const msg_origin *origin; /* decoder: the record; encoder: the message's */
  sandbox_record record;    /* process_record's record */
  msg_batch *batch;         /* decoder and filter output */
  msg scratch;              /* inject_message builds a message here */
  int64_t batch_now_ns;     /* the stamp of unstamped messages; 0: unread */
  const char *inject_names[MSG_H_COUNT + 1]; /* headers, "Fields": interned */
  const void *span_mt;      /* the metatable of record spans */
  /* The Fields table's nodes in name order, as the last message had them
   * (sandbox_inject.c): hmask + 1 nodes, field_order_n of them in use. */
  uint32_t field_order[SANDBOX_FIELD_ORDER_MAX];
  uint32_t field_order_n, field_order_hmask;
  const msg *current;       /* encoder and filter input */
  uint32_t field_iter;      /* read_next_field position */
  buf *out;                 /* encoder output */
  size_t emitted;           /* bytes counted against output_limit */
  uint64_t instructions;    /* counted by the hook */
  sandbox_limit broken;     /* the limit that stopped this call */
  char broken_where[160];   /* Lua file:line where it was stopped */

  /* Shared with the watchdog. */
  sandbox_watchdog *wd;
  struct sandbox *wd_next;
  clockid_t owner_clock;       /* CPU clock of the owning thread */
  atomic_uint_fast64_t call_seq; /* bumped at each call start */
  atomic_bool in_call;
  atomic_bool active;          /* in a batch, timer_event or load: the
                                  watchdog must not sleep (sandbox_watchdog
                                  _enter) */
  unsigned active_depth;       /* owner only: a load within a batch */
  atomic_bool hook_armed;
  atomic_uint_fast64_t armed_seq; /* the call the hook was armed in */
  atomic_uint_fast64_t stop_seq; /* watchdog: stop this call for CPU */
  atomic_uint_fast64_t cpu_used_ns; /* watchdog's last sample */
  pthread_mutex_t hook_lock;
  uint64_t wd_seen_seq;        /* watchdog only */
  uint64_t wd_cpu_start;       /* watchdog only */
};

/* sandbox_alloc.c */
void *sandbox_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* sandbox_env.c: builds the restricted environment in a new state. */
int sandbox_env_open(lua_State *L, char *err, size_t errlen);
/* Pushes a trusted chunk of ours (source text, never a plugin's) and the FFI
 * library, its first argument: FFI reaches no script but through the
 * functions such a chunk defines. Raises on errors. */
void sandbox_push_trusted(lua_State *L, const char *source, size_t len,
                          const char *name);
/* Runs fn(ud) protected; on error writes "cannot build WHAT: why" to err. */
int sandbox_cpcall(lua_State *L, lua_CFunction fn, void *ud, const char *what,
                   char *err, size_t errlen);
/* Reads a whole file; NULL with a message in err on failure. */
char *sandbox_read_file(const char *path, size_t max, size_t *len, char *err,
                        size_t errlen);

/* sandbox_api.c: registers read_config, inject_message, ... */
int sandbox_api_open(lua_State *L, sandbox *sb, char *err, size_t errlen);
/* What one injected message counts against the output limit, whatever its
 * contents: about what the C side spends on an empty message. Each header
 * then counts its string's length or 8 bytes for a number, each field its
 * name's length, 8 bytes a value and its strings' lengths. */
#define MSG_INJECT_COST 64

/* Empties the scratch message and stamps it with the record's origin. */
void sandbox_inject_start(sandbox *sb);
/* Stamps an unset Timestamp (with the batch's time) and moves the scratch
 * message into the batch; false when memory is exhausted. */
bool sandbox_inject_finish(sandbox *sb);
/* Timestamps and INTEGER values: int64, and doubles past +-2^63 do not
 * convert. */
static inline bool sandbox_fits_int64(double n)
{
  return n > -9.2233720368547758e18 && n < 9.2233720368547758e18;
}
/* sandbox_inject.c: inject_message's fast path. sandbox_inject_names keeps
 * the header names' strings for it (raises on memory errors);
 * sandbox_inject_fast builds the message of the table at stack index 1 and
 * pushes it into the batch, or returns false having changed nothing the
 * slow path sees, for it to do it all. */
void sandbox_inject_names(lua_State *L, sandbox *sb);
bool sandbox_inject_fast(lua_State *L, sandbox *sb);
/* sandbox_span.c: record spans. sandbox_span_open defines record_span and
 * the spans' metatable (raises on memory errors). sandbox_span_text gives
 * the bytes of the current record from position `from` to before `to`, or
 * false when those are not whole positions within it. sandbox_is_span says
 * whether the value at idx is a span; sandbox_span_get gives its text, or
 * raises an error naming the header or field `name`. */
void sandbox_span_open(lua_State *L, sandbox *sb);
/* Whole numbers are told by converting back: both are within the record
 * by then, so the conversion is defined. Inline: inject_message's fast
 * path reads a few spans per message. */
static inline bool sandbox_span_text(const sandbox *sb, double from, double to,
                                     const char **s, size_t *len)
{
  const msg_origin *o = sb->origin;
  size_t first, end;

  if (!o || !(from >= 1 && from <= to && to <= (double)o->len + 1))
    return false;
  first = (size_t)from;
  end = (size_t)to;
  if ((double)first != from || (double)end != to) return false;
  *s = o->bytes + first - 1;
  *len = end - first;
  return true;
}
bool sandbox_is_span(lua_State *L, const sandbox *sb, int idx);
void sandbox_span_get(lua_State *L, const sandbox *sb, int idx,
                      const char *name, const char **s, size_t *len);
/* sandbox_record.c: defines record_byte, record_find, record_stops,
 * record_decimal and record_text for decoders. */
int sandbox_record_open(lua_State *L, sandbox *sb, char *err, size_t errlen);
/* sandbox_view.c: defines read_message, read_next_field and
 * inject_message_json for encoders. */
int sandbox_view_open(lua_State *L, sandbox *sb, char *err, size_t errlen);
/* Counts n bytes against the output limit; false once past it. For C
 * that cannot raise (FFI callouts), which reports the limit otherwise. */
static inline bool sandbox_emit(sandbox *sb, size_t n)
{
  sb->emitted += n;
  return !sb->limits.output_limit || sb->emitted <= sb->limits.output_limit;
}
/* Counts n bytes against the output limit; raises a Lua error past it.
 * sandbox_output_broken raises that error, the limit broken by the Lua
 * function `level` levels up (lua_getstack's levels, 1: the caller). */
void sandbox_count_output(lua_State *L, sandbox *sb, size_t n);
void sandbox_output_broken(lua_State *L, sandbox *sb, int level);

/* sandbox.c: the count hook the watchdog arms, and the pattern matcher's
 * interrupt (a pattern_interrupt_fn), which applies the same limits. */
void sandbox_hook(lua_State *L, lua_Debug *ar);
void sandbox_pattern_step(lua_State *L, void *ud);
/* The sandbox of a state: the allocator's userdata. */
static inline sandbox *sandbox_of(lua_State *L)
{
  void *ud;
  lua_getallocf(L, &ud);
  return (sandbox *)((char *)ud - offsetof(sandbox, mem));
}

/* Starts a new call for the limits, the watchdog and the stats: every
 * count starts over. A batch (sandbox_batch.c) starts one per item. */
static inline void sandbox_new_call(sandbox *sb)
{
  uint64_t seq = atomic_load_explicit(&sb->call_seq, memory_order_relaxed);

  sb->emitted = 0;
  sb->instructions = 0;
  sb->broken = SANDBOX_LIMIT_NONE;
  sb->broken_where[0] = '\0';
  sb->mem.refused_size = 0;
  atomic_store_explicit(&sb->call_seq, seq + 1, memory_order_relaxed);
}

/* sandbox_batch.c: the driver, which runs the entry point for each item of
 * a batch. sandbox_batch_open replaces the entry point on top of the stack
 * with its driver (raises on errors). sandbox_item_next takes up the next
 * item that runs Lua (ending those refused before: too long, left out by
 * begin) and begins it: its length for a decoder, 0 for an encoder, or -1
 * when none is left or the hook is armed (which only the C side may
 * disarm, between calls). sandbox_item_end ends item i with run.res.
 * sandbox_items_refuse ends every item left with the result *res. */
void sandbox_batch_open(lua_State *L, sandbox *sb);
int32_t sandbox_item_next(sandbox *sb);
void sandbox_item_end(sandbox *sb);
void sandbox_items_refuse(sandbox *sb, const sandbox_result *res);

/* sandbox_watchdog.c */
void sandbox_watchdog_add(sandbox_watchdog *wd, sandbox *sb);
void sandbox_watchdog_remove(sandbox_watchdog *wd, sandbox *sb);
/* Around a batch, a timer_event or a load of the plugin (nested: a
 * rebuild within a batch), on the owner thread: the watchdog, which sleeps
 * while no sandbox is in one, watches the calls in between. */
void sandbox_watchdog_enter(sandbox *sb);
void sandbox_watchdog_leave(sandbox *sb);

#endif
