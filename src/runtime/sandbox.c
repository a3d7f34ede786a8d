/*
 * sandbox.c - lifecycle and calls of a sandboxed plugin.
 *
 * A sandbox owns one LuaJIT state at a time. Each call runs under limits
 * (see sandbox.h for what each counts). The fast path costs two relaxed
 * atomic stores and one load around a lua_pcall: the JIT stays on, and no
 * hook is installed. The watchdog thread arms a count hook when a call
 * passes its CPU limit (the hook then stops it at once), or, for a plugin
 * with an instruction limit, when a call lasts more than one interval (the
 * hook then counts its instructions and stops it past the limit). LuaJIT is
 * built with LUAJIT_ENABLE_CHECKHOOK, so compiled loops see the armed hook
 * and leave their trace.
 *
 * Stopping is sticky: once a limit breaks, the hook is re-armed to fire on
 * every instruction and raises an error each time, so a script that catches
 * errors (while true do pcall(f) end) cannot keep running. The output and
 * memory limits are sticky too: the call fails even if the script caught
 * their error.
 *
 * A failed call (error or limit) rebuilds the state from the plugin file; a
 * plugin that fails max_failures calls in a row stops, and its calls fail
 * at once (the pipeline dead-letters their records) until it restarts:
 * restart_after_ms after the stop, a wait that doubles at each stop (up
 * to RESTART_MAX_MS) and starts over once the plugin stayed up that long. The
 * clock is read at call time, so a stopped plugin costs no timer. Every
 * failure, stop and restart is logged once, with the plugin, the entry
 * point, the limit, its value and the usage seen, the Lua file:line and
 * the input position.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "pattern.h"
#include "sandbox_internal.h"

#define MAX_PLUGIN_SIZE (4u << 20)
#define RESTART_MAX_MS 60000
#define LOAD_GC_PAUSE 100 /* percent of the heap after a cycle */
#define RUN_GC_PAUSE 200  /* LuaJIT's default */

/* Fixed stack slots of a loaded state: the driver (sandbox_batch.c) holds
 * the entry point. */
/* The stack of a state between calls: the error handler, the driver of
 * the entry point, and a filter's timer_event (nil for none). */
enum { SLOT_ERRFUNC = 1, SLOT_DRIVER = 2, SLOT_TIMER = 3, SLOT_TOP = SLOT_TIMER };

static const char *const limit_names[] = {
  "none", "instruction", "cpu", "memory", "output", "input"
};

const char *sandbox_limit_name(sandbox_limit l)
{
  return limit_names[l];
}

void sandbox_limits_default(sandbox_limits *l)
{
  *l = (sandbox_limits){.cpu_limit_ms = 100, .memory_limit = 8u << 20,
                        .output_limit = 64u << 10, .input_limit = 64u << 10,
                        .mcode_limit_kb = 2048, .max_failures = 10,
                        .restart_after_ms = 1000};
}

static uint64_t monotonic_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* file:line of the innermost function of the plugin's (or of a module it
 * loaded) at or above `level`. C functions and the sandbox's own chunks
 * (sandbox_push_trusted's, named "=...": the driver, the record reader,
 * the message view) are passed over: the plugin's line is what its
 * author can act on. A plugin's frame that made a tail call (`return
 * f(...)`) is gone, and with it the line. */
static void lua_where(lua_State *L, int level, char *out, size_t outlen)
{
  lua_Debug ar;

  for (; lua_getstack(L, level, &ar); level++) {
    if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 &&
        ar.source[0] != '=') {
      snprintf(out, outlen, "%s:%d", ar.short_src, ar.currentline);
      return;
    }
  }
  snprintf(out, outlen, "a tail call of the plugin's (`return f(...)` "
           "keeps no line)");
}

static void arm_hook(sandbox *sb, int count)
{
  pthread_mutex_lock(&sb->hook_lock);
  lua_sethook(sb->L, sandbox_hook, LUA_MASKCOUNT, count);
  atomic_store_explicit(&sb->armed_seq, atomic_load(&sb->call_seq),
                        memory_order_relaxed);
  atomic_store_explicit(&sb->hook_armed, true, memory_order_relaxed);
  pthread_mutex_unlock(&sb->hook_lock);
}

static void disarm_hook(sandbox *sb)
{
  pthread_mutex_lock(&sb->hook_lock);
  lua_sethook(sb->L, NULL, 0, 0);
  atomic_store_explicit(&sb->hook_armed, false, memory_order_relaxed);
  pthread_mutex_unlock(&sb->hook_lock);
}

/* Marks the call as stopped by `limit` and makes the stop sticky. */
static void break_limit(sandbox *sb, sandbox_limit limit, const char *where)
{
  if (sb->broken == SANDBOX_LIMIT_NONE) {
    sb->broken = limit;
    snprintf(sb->broken_where, sizeof sb->broken_where, "%s", where);
  }
  arm_hook(sb, 1);
}

/* Counts `steps` more instructions and says which limit, if any, is due:
 * the CPU limit when the watchdog asked to stop this call. */
static sandbox_limit limit_due(sandbox *sb, uint64_t steps)
{
  uint64_t seq = atomic_load_explicit(&sb->call_seq, memory_order_relaxed);

  sb->instructions += steps;
  if (atomic_load_explicit(&sb->stop_seq, memory_order_acquire) == seq)
    return SANDBOX_LIMIT_CPU;
  if (sb->limits.instruction_limit &&
      sb->instructions >= sb->limits.instruction_limit)
    return SANDBOX_LIMIT_INSTRUCTIONS;
  return SANDBOX_LIMIT_NONE;
}

void sandbox_hook(lua_State *L, lua_Debug *ar)
{
  sandbox *sb = sandbox_of(L);

  if (sb->broken == SANDBOX_LIMIT_NONE) {
    sandbox_limit limit;
    char where[160];

    /* Armed by the watchdog for an item of a batch that has ended since:
     * not this call's. The hook stays until the call ends. */
    if (atomic_load_explicit(&sb->armed_seq, memory_order_relaxed) !=
        atomic_load_explicit(&sb->call_seq, memory_order_relaxed))
      return;
    limit = limit_due(sb, SANDBOX_HOOK_STEP);
    if (limit == SANDBOX_LIMIT_NONE) return;
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0 &&
        ar->source[0] != '=')
      snprintf(where, sizeof where, "%s:%d", ar->short_src, ar->currentline);
    else
      lua_where(L, 0, where, sizeof where);
    break_limit(sb, limit, where);
  }
  luaL_error(L, "%s limit exceeded", sandbox_limit_name(sb->broken));
}

_Thread_local unsigned lumberjit_lpeg_countdown = PATTERN_CHECK_STEPS;

/* LPeg's VM, every PATTERN_CHECK_STEPS instructions: only sandboxes load
 * LPeg, so L is a sandbox's. */
void lumberjit_lpeg_interrupt(lua_State *L)
{
  lumberjit_lpeg_countdown = PATTERN_CHECK_STEPS;
  sandbox_pattern_step(L, NULL);
}

/* The pattern matcher's interrupt (pattern.h): its steps count as
 * instructions, and a stop applies inside it as in Lua code. */
void sandbox_pattern_step(lua_State *L, void *ud)
{
  sandbox *sb = sandbox_of(L);

  (void)ud;
  if (sb->broken == SANDBOX_LIMIT_NONE) {
    sandbox_limit limit = limit_due(sb, PATTERN_CHECK_STEPS);
    char where[160];

    if (limit == SANDBOX_LIMIT_NONE) return;
    lua_where(L, 1, where, sizeof where);
    break_limit(sb, limit, where);
  }
  luaL_error(L, "%s limit exceeded", sandbox_limit_name(sb->broken));
}

void sandbox_count_output(lua_State *L, sandbox *sb, size_t n)
{
  if (!sandbox_emit(sb, n)) sandbox_output_broken(L, sb, 1);
}

void sandbox_output_broken(lua_State *L, sandbox *sb, int level)
{
  char where[160];

  lua_where(L, level, where, sizeof where);
  break_limit(sb, SANDBOX_LIMIT_OUTPUT, where);
  luaL_error(L, "output limit exceeded");
}

/* The error handler of every call: keeps the message and notes where it
 * was raised (the innermost Lua frame) for the failure report. */
static int on_error(lua_State *L)
{
  sandbox *sb = sandbox_of(L);

  if (sb->broken_where[0] == '\0')
    lua_where(L, 1, sb->broken_where, sizeof sb->broken_where);
  if (!lua_isstring(L, 1)) {
    lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    return 1;
  }
  lua_settop(L, 1);
  return 1;
}

static void begin_call(sandbox *sb)
{
  if (atomic_load_explicit(&sb->hook_armed, memory_order_relaxed))
    disarm_hook(sb);
  sandbox_new_call(sb);
  atomic_store_explicit(&sb->in_call, true, memory_order_release);
  sb->mem.enforce = true;
}

static void end_call(sandbox *sb)
{
  sb->mem.enforce = false;
  sb->record.len = 0; /* before any rebuild runs the plugin's top level */
  atomic_store_explicit(&sb->in_call, false, memory_order_release);
  if (atomic_load_explicit(&sb->hook_armed, memory_order_relaxed))
    disarm_hook(sb);
}

/* The function a plugin's calls enter, for messages. */
static const char *entry_name(const sandbox *sb)
{
  return sb->timer_call ? "timer_event"
       : sb->by_position ? "process_record" : "process_message";
}

/* The limit a finished call broke: the first one noted, else a refused
 * allocation (possibly caught by the script). */
static sandbox_limit call_broken(const sandbox *sb)
{
  if (sb->broken != SANDBOX_LIMIT_NONE) return sb->broken;
  if (sb->mem.refused_size) return SANDBOX_LIMIT_MEMORY;
  return SANDBOX_LIMIT_NONE;
}

/* Writes the one-line failure reason of the call that just ended; the error
 * message, if any, is on top of the stack. */
static void describe_failure(sandbox *sb, sandbox_limit limit,
                             sandbox_result *res)
{
  lua_State *L = sb->L;
  const char *where = sb->broken_where[0] ? sb->broken_where : "?";
  char *r = res->reason;
  size_t n = sizeof res->reason;
  double cpu_ms = (double)atomic_load(&sb->cpu_used_ns) / 1e6;

  switch (limit) {
  case SANDBOX_LIMIT_CPU:
    snprintf(r, n, "cpu limit exceeded: limit %" PRIu64 " ms, used %.1f ms, at %s",
             sb->limits.cpu_limit_ms, cpu_ms, where);
    break;
  case SANDBOX_LIMIT_INSTRUCTIONS:
    snprintf(r, n, "instruction limit exceeded: limit %" PRIu64
             ", counted %" PRIu64 " after %.1f ms of CPU, at %s",
             sb->limits.instruction_limit, sb->instructions, cpu_ms, where);
    break;
  case SANDBOX_LIMIT_MEMORY:
    if (sb->loading)
      snprintf(r, n, "memory limit exceeded: limit %" PRIu64 " bytes, in use "
               "%zu, refused a request of %zu bytes, at the top level of %s",
               sb->limits.memory_limit, sb->mem.used, sb->mem.refused_size,
               sb->filename);
    else
      snprintf(r, n, "memory limit exceeded: limit %" PRIu64 " bytes, in use "
               "%zu, refused a request of %zu bytes, in %s (%s:%d)",
               sb->limits.memory_limit, sb->mem.used, sb->mem.refused_size,
               entry_name(sb), sb->filename, sb->entry_line);
    break;
  case SANDBOX_LIMIT_OUTPUT:
    snprintf(r, n, "output limit exceeded: limit %" PRIu64 " bytes, emitted %zu, at %s",
             sb->limits.output_limit, sb->emitted, where);
    break;
  default:
    snprintf(r, n, "error: %s",
             lua_isstring(L, -1) ? lua_tostring(L, -1) : "unknown");
    break;
  }
}

static void log_line(sandbox *sb, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

static void log_line(sandbox *sb, const char *fmt, ...)
{
  char line[1024];
  va_list ap;

  if (!sb->log) return;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  sb->log(sb->log_ud, line);
}

static void close_state(sandbox *sb)
{
  pthread_mutex_lock(&sb->hook_lock);
  if (sb->L) lua_close(sb->L);
  sb->L = NULL;
  atomic_store(&sb->hook_armed, false);
  pthread_mutex_unlock(&sb->hook_lock);
}

static void memory_error(sandbox *sb, const char *what, char *err,
                         size_t errlen)
{
  snprintf(err, errlen, "loading %s went over memory_limit: limit %" PRIu64
           " bytes, in use %zu, refused a request of %zu bytes", what,
           sb->limits.memory_limit, sb->mem.used, sb->mem.refused_size);
}

/* Replaces the entry point, its argument, with its driver. */
static int open_driver(lua_State *L)
{
  sandbox_batch_open(L, lua_touserdata(L, lua_upvalueindex(1)));
  return 1;
}

/* Creates the state and runs the plugin file in it (under the limits, so a
 * plugin whose top level runs away is stopped too). Leaves the error
 * handler and the driver of its entry point in their slots. */
static int load_state(sandbox *sb, char *err, size_t errlen)
{
  lua_State *L;
  size_t len;
  char *src;
  int rc;

  close_state(sb);
  sb->mem.used = 0;
  L = lua_newstate(sandbox_alloc, &sb->mem);
  if (!L) {
    snprintf(err, errlen, "cannot create a Lua state within %" PRIu64 " bytes",
             sb->limits.memory_limit);
    return -1;
  }
  pthread_mutex_lock(&sb->hook_lock);
  sb->L = L;
  pthread_mutex_unlock(&sb->hook_lock);
  /* While the plugin loads, a collection cycle starts as soon as one ends
   * (the default pause lets the heap double first): what building its
   * grammars drops is freed as it goes, and the malloc heap the state
   * leaves behind has fewer holes (0.1 MB less idle RSS with four syslog
   * decoders on two workers). */
  lua_gc(L, LUA_GCSETPAUSE, LOAD_GC_PAUSE);
  if (sandbox_env_open(L, err, errlen) != 0 ||
      sandbox_api_open(L, sb, err, errlen) != 0)
    goto fail;
  /* Settings and source are parsed within the memory limit: lua_load and
   * lua_pcall are protected, so a refusal is an error, not an abort. */
  sb->mem.refused_size = 0;
  sb->mem.enforce = true;
  rc = luaL_loadbufferx(L, sb->settings, strlen(sb->settings), "=settings", "t");
  if (rc == 0) rc = lua_pcall(L, 0, 1, 0);
  sb->mem.enforce = false;
  if (rc != 0) {
    if (sb->mem.refused_size) memory_error(sb, "its settings", err, errlen);
    else snprintf(err, errlen, "bad settings: %s", lua_tostring(L, -1));
    goto fail;
  }
  lua_setfield(L, LUA_REGISTRYINDEX, SANDBOX_SETTINGS_KEY);

  src = sandbox_read_file(sb->filename, MAX_PLUGIN_SIZE, &len, err, errlen);
  if (!src) goto fail;
  lua_pushcfunction(L, on_error);
  lua_pushfstring(L, "@%s", sb->filename);
  sb->mem.enforce = true;
  rc = luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t");
  sb->mem.enforce = false;
  free(src);
  if (rc != 0) {
    if (sb->mem.refused_size) memory_error(sb, sb->filename, err, errlen);
    else snprintf(err, errlen, "%s", lua_tostring(L, -1));
    goto fail;
  }
  lua_remove(L, -2);
  sandbox_watchdog_enter(sb);
  begin_call(sb);
  sb->loading = true;
  rc = lua_pcall(L, 0, 0, SLOT_ERRFUNC);
  end_call(sb);
  sandbox_watchdog_leave(sb);
  if (rc != 0 || call_broken(sb) != SANDBOX_LIMIT_NONE) {
    sandbox_result res;
    describe_failure(sb, call_broken(sb), &res);
    sb->loading = false;
    snprintf(err, errlen, "%s: loading failed: %s", sb->filename, res.reason);
    goto fail;
  }
  sb->loading = false;
  /* The entry point, process_message, or for a decoder that reads its
   * record by position process_record (sandbox_record.c). Raw: a metatable
   * the plugin put on its globals must not run here, outside any limit. */
  sb->by_position = false;
  if (sb->kind == SANDBOX_DECODER) {
    lua_pushliteral(L, "process_record");
    lua_rawget(L, LUA_GLOBALSINDEX);
    sb->by_position = lua_isfunction(L, -1);
    if (!sb->by_position) lua_pop(L, 1);
  }
  if (!sb->by_position) {
    lua_pushliteral(L, "process_message");
    lua_rawget(L, LUA_GLOBALSINDEX);
  }
  if (!lua_isfunction(L, -1)) {
    snprintf(err, errlen, "%s does not define the function process_message%s",
             sb->filename, sb->kind == SANDBOX_DECODER ? " (or process_record)" : "");
    goto fail;
  }
  {
    lua_Debug ar;
    lua_pushvalue(L, -1);
    lua_getinfo(L, ">S", &ar);
    sb->entry_line = ar.linedefined;
  }
  lua_pushlightuserdata(L, sb);
  lua_pushcclosure(L, open_driver, 1);
  lua_insert(L, -2);
  if (lua_pcall(L, 1, 1, 0) != 0) {
    snprintf(err, errlen, "cannot build the driver: %s",
             lua_isstring(L, -1) ? lua_tostring(L, -1) : "not enough memory");
    goto fail;
  }
  lua_pushliteral(L, "timer_event");
  lua_rawget(L, LUA_GLOBALSINDEX);
  if (sb->kind != SANDBOX_FILTER || !lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    lua_pushnil(L);
  }
  /* The idle state holds only what the plugin keeps. Twice: userdata with a
   * finalizer (every LPeg pattern, so the intermediate ones a grammar was
   * built of) are finalized by the first cycle and freed by the second;
   * after one, a syslog decoder's state still held 170 KB of them. */
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCSETPAUSE, RUN_GC_PAUSE);
  return 0;
fail:
  close_state(sb);
  return -1;
}

/* Stops the plugin until its restart time. The wait doubles at each stop,
 * and starts over once the plugin has stayed up for RESTART_MAX_MS. */
static void stop_for_a_while(sandbox *sb)
{
  uint64_t first = sb->limits.restart_after_ms ? sb->limits.restart_after_ms : 1;
  uint64_t now = monotonic_ms();

  close_state(sb);
  sb->stats.stops++;
  if (sb->restart_wait_ms == 0 || now - sb->restarted_at_ms >= RESTART_MAX_MS)
    sb->restart_wait_ms = first;
  else if (sb->restart_wait_ms < RESTART_MAX_MS)
    sb->restart_wait_ms *= 2;
  if (sb->restart_wait_ms > RESTART_MAX_MS) sb->restart_wait_ms = RESTART_MAX_MS;
  sb->restart_at_ms = now + sb->restart_wait_ms;
}

/* A stopped plugin whose time has come gets a new state. */
static void maybe_restart(sandbox *sb)
{
  char err[512];

  if (monotonic_ms() < sb->restart_at_ms) return;
  if (load_state(sb, err, sizeof err) != 0) {
    stop_for_a_while(sb);
    log_line(sb, "sandbox \"%s\" (%s): restart failed: %s; next try in "
             "%.1f s", sb->name, sb->filename, err,
             (double)sb->restart_wait_ms / 1000);
    return;
  }
  sb->failures_in_row = 0;
  sb->restarted_at_ms = monotonic_ms();
  sb->stats.restarts++;
  log_line(sb, "sandbox \"%s\" (%s): restarted", sb->name, sb->filename);
}

/* After a failed call: log it, then rebuild the state or stop the plugin. */
static void recover(sandbox *sb, const sandbox_result *res)
{
  const msg_origin *o = sb->origin;
  char origin[256], err[512];

  snprintf(origin, sizeof origin, "input \"%s\" %s %" PRIu64,
           o && o->input ? o->input : "-",
           o && o->is_offset ? "offset" : "record", o ? o->position : 0);
  sb->stats.failed++;
  sb->failures_in_row++;
  if (sb->failures_in_row >= sb->limits.max_failures) {
    stop_for_a_while(sb);
    log_line(sb, "sandbox \"%s\" (%s) %s: %s; %s; plugin stopped "
             "after %" PRIu32 " failed calls in a row; restarting in %.1f s",
             sb->name, sb->filename, entry_name(sb), res->reason, origin,
             sb->failures_in_row, (double)sb->restart_wait_ms / 1000);
    return;
  }
  if (load_state(sb, err, sizeof err) != 0) {
    stop_for_a_while(sb);
    log_line(sb, "sandbox \"%s\" (%s) %s: %s; %s; plugin stopped: "
             "rebuilding its state failed: %s; restarting in %.1f s", sb->name,
             sb->filename, entry_name(sb), res->reason, origin, err,
             (double)sb->restart_wait_ms / 1000);
    return;
  }
  sb->stats.restarts++;
  if (!sb->limits.quiet_rebuilds)
    log_line(sb, "sandbox \"%s\" (%s) %s: %s; %s; state rebuilt "
             "(failure %" PRIu32 " of %" PRIu64 " allowed in a row)",
             sb->name, sb->filename, entry_name(sb), res->reason, origin,
             sb->failures_in_row, sb->limits.max_failures);
}

/* Fails the call that just ended: reports it, then rebuilds or stops. */
static void fail_call(sandbox *sb, sandbox_limit limit, sandbox_result *res)
{
  res->status = SANDBOX_FAILED;
  res->limit = limit;
  sb->stats.failures[limit]++;
  describe_failure(sb, limit, res);
  lua_settop(sb->L, SLOT_TOP);
  recover(sb, res);
}

static bool stopped(sandbox *sb, sandbox_result *res)
{
  uint64_t now;

  if (!sb->L) maybe_restart(sb);
  if (sb->L) return false;
  now = monotonic_ms();
  res->status = SANDBOX_STOPPED;
  res->limit = SANDBOX_LIMIT_NONE;
  snprintf(res->reason, sizeof res->reason, "plugin \"%s\" is stopped after "
           "failing; restarting in %.1f s", sb->name,
           (double)(sb->restart_at_ms > now ? sb->restart_at_ms - now : 0) / 1000);
  return true;
}

/* Runs the batch set up in sb->run: calls of the driver, each running items
 * until one fails or the hook needs disarming; a failed item is reported,
 * the state rebuilt, and the next call goes on after it. */
static void run_items(sandbox *sb)
{
  sandbox_run *run = &sb->run;
  sandbox_result res;

  while (run->i < run->n) {
    int32_t len;
    int rc;

    if (stopped(sb, &res)) {
      sandbox_items_refuse(sb, &res);
      return;
    }
    begin_call(sb);
    len = sandbox_item_next(sb);
    if (len < 0) {
      end_call(sb);
      continue;
    }
    lua_pushvalue(sb->L, SLOT_DRIVER);
    if (sb->kind == SANDBOX_DECODER) lua_pushinteger(sb->L, len);
    rc = lua_pcall(sb->L, sb->kind == SANDBOX_DECODER, 0, SLOT_ERRFUNC);
    end_call(sb);
    if (run->running) {
      fail_call(sb, call_broken(sb), &run->res);
      sandbox_item_end(sb);
    } else if (rc != 0) {
      /* Raised in the driver between two items (a limit whose hook fired
       * late): no item failed. */
      lua_settop(sb->L, SLOT_TOP);
    }
  }
}

/* The owning thread's CPU clock, read twice a batch (never per item: the
 * per-record path must not pay a clock read for each record). */
static uint64_t thread_cpu_ns(void)
{
  struct timespec ts;

  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const uint64_t sandbox_cpu_bucket_ns[SANDBOX_CPU_BUCKETS - 1] = {
  1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000, 10000000,
  100000000,
};

/* ns of CPU over `calls` calls: they count in their average's bucket. */
static void count_cpu(sandbox *sb, uint64_t ns, uint64_t calls)
{
  uint64_t each;
  size_t b = 0;

  sb->stats.cpu_ns += ns;
  if (!calls) return;
  each = ns / calls;
  while (b < SANDBOX_CPU_BUCKETS - 1 && each > sandbox_cpu_bucket_ns[b]) b++;
  sb->stats.cpu_calls[b] += calls;
}

static void run_batch(sandbox *sb, size_t n, const sandbox_each *each)
{
  uint64_t cpu = thread_cpu_ns(), calls = sb->stats.calls;

  sandbox_watchdog_enter(sb);

  sb->run.n = n;
  sb->run.i = 0;
  sb->run.running = false;
  sb->run.each = each;
  sb->batch_now_ns = 0;
  run_items(sb);
  sandbox_watchdog_leave(sb);
  count_cpu(sb, thread_cpu_ns() - cpu, sb->stats.calls - calls);
  sb->batch = NULL;
  sb->out = NULL;
  sb->current = NULL;
  sb->origin = NULL;
  sb->run.recs = NULL;
  sb->run.msgs = NULL;
}

void sandbox_decode_many(sandbox *sb, const msg_origin *recs, size_t n,
                         msg_batch *out, const sandbox_each *each)
{
  sb->run.recs = recs;
  sb->batch = out;
  run_batch(sb, n, each);
}

void sandbox_filter_many(sandbox *sb, const msg *const *msgs, size_t n,
                         msg_batch *out, const sandbox_each *each)
{
  sb->run.msgs = msgs;
  sb->batch = out;
  run_batch(sb, n, each);
}

bool sandbox_has_timer(const sandbox *sb)
{
  return sb->L && lua_isfunction(sb->L, SLOT_TIMER);
}

void sandbox_timer_event(sandbox *sb, int64_t ns, bool shutdown,
                         const msg_origin *origin, msg_batch *out,
                         sandbox_result *res)
{
  uint32_t first = out->len;
  uint64_t cpu;
  int rc;

  res->status = SANDBOX_OK;
  res->limit = SANDBOX_LIMIT_NONE;
  res->reason[0] = '\0';
  if (stopped(sb, res) || !sandbox_has_timer(sb)) return;
  sb->batch = out;
  sb->origin = origin;
  sb->batch_now_ns = 0;
  cpu = thread_cpu_ns();
  sandbox_watchdog_enter(sb);
  begin_call(sb);
  sb->stats.calls++;
  lua_pushvalue(sb->L, SLOT_TIMER);
  lua_pushnumber(sb->L, (lua_Number)ns);
  lua_pushboolean(sb->L, shutdown);
  rc = lua_pcall(sb->L, 2, 0, SLOT_ERRFUNC);
  end_call(sb);
  sandbox_watchdog_leave(sb);
  count_cpu(sb, thread_cpu_ns() - cpu, 1);
  if (rc != 0 || call_broken(sb) != SANDBOX_LIMIT_NONE) {
    sb->timer_call = true;
    fail_call(sb, call_broken(sb), res);
    sb->timer_call = false;
    out->len = first;
  } else {
    sb->failures_in_row = 0;
  }
  sb->batch = NULL;
  sb->origin = NULL;
}

void sandbox_encode_many(sandbox *sb, const msg *const *msgs, size_t n,
                         buf *out, const sandbox_each *each)
{
  sb->run.msgs = msgs;
  sb->out = out;
  run_batch(sb, n, each);
}

static void keep_result(void *ud, size_t i, const sandbox_result *res)
{
  (void)i;
  *(sandbox_result *)ud = *res;
}

void sandbox_decode(sandbox *sb, const msg_origin *rec, msg_batch *out,
                    sandbox_result *res)
{
  sandbox_each each = {NULL, keep_result, res};

  sandbox_decode_many(sb, rec, 1, out, &each);
}

void sandbox_encode(sandbox *sb, const msg *m, buf *out, sandbox_result *res)
{
  sandbox_each each = {NULL, keep_result, res};

  sandbox_encode_many(sb, &m, 1, out, &each);
}

static char *dup_or_empty(const char *s)
{
  return strdup(s ? s : "");
}

sandbox *sandbox_create(const sandbox_config *cfg, sandbox_watchdog *wd,
                        char *err, size_t errlen)
{
  sandbox *sb = calloc(1, sizeof *sb);

  if (!sb) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  sb->name = dup_or_empty(cfg->name);
  sb->filename = dup_or_empty(cfg->filename);
  sb->settings = dup_or_empty(cfg->settings && *cfg->settings ? cfg->settings
                                                              : "return {}");
  sb->module_dirs = dup_or_empty(cfg->module_dirs);
  sb->kind = cfg->kind;
  sb->limits = cfg->limits;
  if (sb->limits.max_failures == 0) sb->limits.max_failures = 1;
  sb->log = cfg->log;
  sb->log_ud = cfg->log_ud;
  sb->mem.limit = cfg->limits.memory_limit;
  msg_init(&sb->scratch);
  pthread_mutex_init(&sb->hook_lock, NULL);
  if (!sb->name || !sb->filename || !sb->settings || !sb->module_dirs ||
      pthread_getcpuclockid(pthread_self(), &sb->owner_clock) != 0) {
    snprintf(err, errlen, "out of memory or no thread CPU clock");
    sandbox_destroy(sb);
    return NULL;
  }
  sb->wd = wd;
  if (wd) sandbox_watchdog_add(wd, sb);
  if (load_state(sb, err, errlen) != 0) {
    sandbox_destroy(sb);
    return NULL;
  }
  return sb;
}

void sandbox_destroy(sandbox *sb)
{
  if (!sb) return;
  if (sb->wd) sandbox_watchdog_remove(sb->wd, sb);
  close_state(sb);
  pthread_mutex_destroy(&sb->hook_lock);
  msg_free(&sb->scratch);
  free(sb->name);
  free(sb->filename);
  free(sb->settings);
  free(sb->module_dirs);
  free(sb);
}

void sandbox_detach(sandbox *sb)
{
  if (sb->wd) sandbox_watchdog_remove(sb->wd, sb);
  sb->wd = NULL;
}

int sandbox_attach(sandbox *sb, sandbox_watchdog *wd)
{
  sandbox_detach(sb);
  if (pthread_getcpuclockid(pthread_self(), &sb->owner_clock) != 0) return -1;
  sb->wd = wd;
  if (wd) sandbox_watchdog_add(wd, sb);
  return 0;
}

bool sandbox_is_stopped(const sandbox *sb)
{
  return sb->L == NULL;
}

void sandbox_get_stats(const sandbox *sb, sandbox_stats *out)
{
  *out = sb->stats;
  out->memory = sb->mem.used;
  out->memory_peak = sb->mem.peak;
}

void sandbox_stats_add(sandbox_stats *sum, const sandbox_stats *s)
{
  sum->calls += s->calls;
  sum->rejected += s->rejected;
  sum->skipped += s->skipped;
  sum->failed += s->failed;
  for (size_t i = 0; i < SANDBOX_LIMITS; i++) sum->failures[i] += s->failures[i];
  sum->stops += s->stops;
  sum->restarts += s->restarts;
  sum->cpu_ns += s->cpu_ns;
  for (size_t i = 0; i < SANDBOX_CPU_BUCKETS; i++)
    sum->cpu_calls[i] += s->cpu_calls[i];
  sum->memory += s->memory;
  if (s->memory_peak > sum->memory_peak) sum->memory_peak = s->memory_peak;
}
