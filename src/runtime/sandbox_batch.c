/*
 * sandbox_batch.c - the driver: one call into Lua runs a plugin's entry
 * point for each item of a batch: the records a decoder decodes, the
 * messages an encoder encodes or a filter reads.
 *
 * Why: a lua_pcall from C per record, plus the C API calls around it to
 * push the record and read the results, and the exits from compiled code
 * that returning to C makes, cost about 900 instructions per W3 line for
 * the decoder and the encoder together: an eighth of the pipeline. In the
 * driver's loop the entry point is called from Lua, and step(), called
 * through FFI as in sandbox_record.c, ends one item and begins the next.
 *
 * Each item is still a call of its own: step() starts every count over
 * (sandbox_new_call), so the limits, the watchdog's CPU time, the failure
 * count and the stats see one call per item, as when each had a pcall.
 * What cannot be done inside a call ends it instead and the C side goes
 * on in a new one (sandbox.c, run_items):
 * - an item that fails (an error, a broken limit, a refused allocation
 *   the script caught) ends the call, which its error unwinds, and the
 *   state is rebuilt or the plugin stopped, as before;
 * - a hook the watchdog armed is disarmed between calls only, since
 *   lua_sethook must not run under a call through FFI.
 * step() reads and writes C memory only, never the Lua state (FFI
 * callouts must not); what needs the state, a rejection's reason or a bad
 * result's type, goes through reject and bad_result, Lua C functions.
 *
 * Safety: as in sandbox_record.c, FFI reaches only the trusted chunk below,
 * which keeps it, the sandbox's address and step in upvalues of the driver,
 * a closure the state's stack holds and no script can reach.
 */
#include <inttypes.h>
#include <stdio.h>

#include <lauxlib.h>

#include "sandbox_internal.h"

static const char driver_source[] =
  "local ffi, sandbox, fns, record_at, reject, bad_result, entry, kind = ...\n"
  "ffi.cdef[[\n"
  "typedef struct { int32_t (*step)(void *, double, const char *, size_t); } lj_driver_fns;\n"
  "typedef struct { const uint8_t *bytes; int32_t len; } lj_driver_record;\n"
  "]]\n"
  "local step = ffi.cast('const lj_driver_fns *', fns).step\n"
  "local record = ffi.cast('const lj_driver_record *', record_at)\n"
  "local sb, string_of, type = ffi.cast('void *', sandbox), ffi.string, type\n"
  "\n"
  "if kind == 'filter' then\n"
  "  return function()\n"
  "    repeat\n"
  "      local code, reason = entry()\n"
  "      if code == -1 then reject(reason) end\n"
  "    until step(sb, type(code) == 'number' and code or 0, nil, 0) < 0\n"
  "  end\n"
  "end\n"
  "if kind == 'encoder' then\n"
  "  return function()\n"
  "    repeat\n"
  "      local out, reason = entry()\n"
  "      local t, more = type(out)\n"
  "      if t == 'string' then more = step(sb, 0, out, #out)\n"
  "      elseif t == 'number' then\n"
  "        if out == -1 then reject(reason) end\n"
  "        more = step(sb, out, nil, 0)\n"
  "      elseif t == 'nil' then more = step(sb, 0, nil, 0)\n"
  "      else bad_result(t); more = step(sb, 0, nil, 0) end\n"
  "    until more < 0\n"
  "  end\n"
  "end\n"
  "-- A decoder: process_record gets the length, process_message the bytes\n"
  "-- (by_position is an upvalue that never changes: the JIT folds the test).\n"
  "local by_position = kind == 'record'\n"
  "return function(len)\n"
  "  repeat\n"
  "    local code, reason = entry(by_position and len or string_of(record.bytes, len))\n"
  "    if code == -1 then reject(reason) end\n"
  "    len = step(sb, type(code) == 'number' and code or 0, nil, 0)\n"
  "  until len < 0\n"
  "end\n";

/* Item i's output so far is dropped: a result other than SANDBOX_OK
 * leaves none. Decoders and filters make messages, encoders bytes. */
static void drop_output(sandbox *sb)
{
  if (sb->kind != SANDBOX_ENCODER) sb->batch->len = (uint32_t)sb->run.first;
  else sb->out->len = sb->run.first;
}

void sandbox_item_end(sandbox *sb)
{
  sandbox_run *run = &sb->run;

  if (run->res.status != SANDBOX_OK) drop_output(sb);
  run->running = false;
  run->each->end(run->each->ud, run->i++, &run->res);
}

/* Item i is taken up: whatever it adds begins here. */
static bool take_up(sandbox *sb)
{
  sandbox_run *run = &sb->run;

  run->res.status = SANDBOX_OK;
  run->res.limit = SANDBOX_LIMIT_NONE;
  run->res.reason[0] = '\0';
  if (run->each->begin && !run->each->begin(run->each->ud, run->i)) {
    run->i++;
    return false;
  }
  run->first = sb->kind != SANDBOX_ENCODER ? sb->batch->len : sb->out->len;
  return true;
}

void sandbox_items_refuse(sandbox *sb, const sandbox_result *res)
{
  while (sb->run.i < sb->run.n) {
    if (!take_up(sb)) continue;
    sb->run.res = *res;
    sandbox_item_end(sb);
  }
}

/* A record past the input limit is rejected before any Lua runs. Lengths
 * reach the driver as int32 (and process_record's positions are int32,
 * record_byte's reads), so no limit is above INT32_MAX. */
static bool too_long(sandbox *sb, const msg_origin *rec)
{
  uint64_t limit = sb->limits.input_limit;

  if (!limit || limit > INT32_MAX) limit = INT32_MAX;
  if (rec->len <= limit) return false;
  sb->run.res.status = SANDBOX_REJECTED;
  sb->run.res.limit = SANDBOX_LIMIT_INPUT;
  snprintf(sb->run.res.reason, sizeof sb->run.res.reason,
           "input limit exceeded: record of %zu bytes, limit %" PRIu64,
           rec->len, limit);
  sb->stats.failures[SANDBOX_LIMIT_INPUT]++;
  return true;
}

int32_t sandbox_item_next(sandbox *sb)
{
  sandbox_run *run = &sb->run;

  while (run->i < run->n) {
    if (atomic_load_explicit(&sb->hook_armed, memory_order_relaxed)) return -1;
    if (!take_up(sb)) continue;
    if (sb->kind != SANDBOX_DECODER) {
      const msg *m = run->msgs[run->i];
      sb->current = m;
      sb->origin = &m->origin;
      sb->field_iter = 0;
    } else {
      const msg_origin *rec = &run->recs[run->i];
      if (too_long(sb, rec)) {
        sandbox_item_end(sb);
        continue;
      }
      sb->origin = rec;
      sb->record.bytes = (const uint8_t *)rec->bytes;
      sb->record.len = (int32_t)rec->len;
    }
    sandbox_new_call(sb);
    sb->stats.calls++;
    run->running = true;
    return sb->kind != SANDBOX_DECODER ? 0 : sb->record.len;
  }
  return -1;
}

/* The string an encoder returned, within the output limit. */
static bool append_returned(sandbox *sb, const char *s, size_t len)
{
  if (!sandbox_emit(sb, len)) {
    sb->broken = SANDBOX_LIMIT_OUTPUT;
    snprintf(sb->broken_where, sizeof sb->broken_where,
             "the return of process_message");
    return false;
  }
  if (!buf_append(sb->out, s, len)) {
    sb->run.res.status = SANDBOX_REJECTED;
    snprintf(sb->run.res.reason, sizeof sb->run.res.reason,
             "out of memory appending %zu encoded bytes", len);
  }
  return true;
}

/* The driver, after the entry point returned `code` (0 when it returned no
 * number) and, for an encoder, maybe a string s: ends the item and begins
 * the next. -1 ends the call; an item still running then has failed: a
 * limit broke, or memory was refused (the script may have caught that). */
static int32_t step(void *at, double code, const char *s, size_t len)
{
  sandbox *sb = at;

  if (sb->broken != SANDBOX_LIMIT_NONE || sb->mem.refused_size) return -1;
  if (s && !append_returned(sb, s, len)) return -1;
  if (code == -2 && sb->kind == SANDBOX_ENCODER &&
      sb->run.res.status == SANDBOX_OK) {
    sb->run.res.status = SANDBOX_SKIPPED;
    sb->stats.skipped++;
  }
  sb->failures_in_row = 0;
  sandbox_item_end(sb);
  return sandbox_item_next(sb);
}

/* Handed to the chunk as data: a function pointer is not an object pointer. */
static const struct {
  int32_t (*step)(void *, double, const char *, size_t);
} driver_fns = {step};

/* reject(reason): the item returned -1. */
static int api_reject(lua_State *L)
{
  sandbox *sb = sandbox_of(L);

  snprintf(sb->run.res.reason, sizeof sb->run.res.reason, "rejected by %s: %s",
           sb->name, lua_isstring(L, 1) ? lua_tostring(L, 1) : "no reason given");
  sb->run.res.status = SANDBOX_REJECTED;
  sb->stats.rejected++;
  return 0;
}

/* bad_result(type): an encoder returned a table or a boolean, a bug in the
 * encoder rather than an empty line. */
static int api_bad_result(lua_State *L)
{
  sandbox *sb = sandbox_of(L);

  snprintf(sb->run.res.reason, sizeof sb->run.res.reason,
           "encoder '%s' returned a %s; process_message returns a string, a "
           "status number or nothing", sb->name, lua_tostring(L, 1));
  sb->run.res.status = SANDBOX_REJECTED;
  sb->stats.rejected++;
  return 0;
}

void sandbox_batch_open(lua_State *L, sandbox *sb)
{
  const char *kind = sb->kind == SANDBOX_ENCODER ? "encoder"
                   : sb->kind == SANDBOX_FILTER ? "filter"
                   : sb->by_position ? "record" : "message";

  sandbox_push_trusted(L, driver_source, sizeof driver_source - 1, "=driver");
  lua_pushlightuserdata(L, sb);
  lua_pushlightuserdata(L, (void *)&driver_fns);
  lua_pushlightuserdata(L, &sb->record);
  lua_pushcfunction(L, api_reject);
  lua_pushcfunction(L, api_bad_result);
  lua_pushvalue(L, -8); /* the entry point */
  lua_pushstring(L, kind);
  lua_call(L, 8, 1);
  lua_replace(L, -2);
}
