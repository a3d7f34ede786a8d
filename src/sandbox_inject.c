/*
 * sandbox_inject.c - inject_message for decoders: a Lua walk of the
 * message table that hands each value to C through LuaJIT's FFI.
 *
 * Why: walking the table from C through the Lua API (lua_next, lua_type,
 * lua_tolstring for every key and value) was the largest single cost of a
 * decoder call. Written in Lua, the walk compiles into the decoder's own
 * traces, and each value reaches C as a pointer and a length (a string) or
 * a double, without leaving compiled code.
 *
 * The fast path takes only what it can take whole: string headers, number
 * headers and scalar fields (string, number, boolean). Anything else (an
 * array, a typed field, a Uuid, a wrong type, an unknown key, a number out
 * of range, the output limit passed, memory refused) makes it give up, and
 * the message is built again from the start by sandbox_inject_message, the
 * C walk with every check and every error message. The fast path changes
 * nothing the slow one sees: it builds in the scratch message, which the
 * slow one resets, and counts its output apart, adding it to the call's
 * only when the message is pushed. So both ways give the same messages, the
 * same counts and the same errors.
 *
 * Safety: as for read_message (sandbox_view.c), the FFI and the C entry
 * points stay in the trusted chunk's upvalues; the functions called take
 * only the sandbox, strings as pointer and length, and numbers, and raise
 * no error (C must never longjmp across an FFI frame): each returns 0, or
 * non-zero to give up. The slow path is reached by a tail call, so its
 * errors name the plugin's line, as before.
 */
#include "sandbox_internal.h"

static const char inject_source[] =
  "local ffi, slow, sb, fn, string_headers, number_headers = ...\n"
  "sb = ffi.cast('void *', sb)\n"
  "local begin = ffi.cast('int (*)(void *)', fn.begin)\n"
  "local header_string = ffi.cast('int (*)(void *, int, const char *, size_t)',\n"
  "                               fn.header_string)\n"
  "local header_number = ffi.cast('int (*)(void *, int, double)', fn.header_number)\n"
  "local field_string = ffi.cast(\n"
  "  'int (*)(void *, const char *, size_t, const char *, size_t)', fn.field_string)\n"
  "local field_scalar = ffi.cast(\n"
  "  'int (*)(void *, const char *, size_t, int, double)', fn.field_scalar)\n"
  "local NUMBER, BOOLEAN = fn.number, fn.boolean\n"
  "local commit = ffi.cast('int (*)(void *)', fn.commit)\n"
  "local next, type = next, type\n"
  "\n"
  "local function add_fields(fields)\n"
  "  local name, value = next(fields)\n"
  "  while name ~= nil do\n"
  "    if type(name) ~= 'string' then return false end\n"
  "    local t, rc = type(value), 1\n"
  "    if t == 'string' then rc = field_string(sb, name, #name, value, #value)\n"
  "    elseif t == 'number' then rc = field_scalar(sb, name, #name, NUMBER, value)\n"
  "    elseif t == 'boolean' then\n"
  "      rc = field_scalar(sb, name, #name, BOOLEAN, value and 1 or 0)\n"
  "    end\n"
  "    if rc ~= 0 then return false end\n"
  "    name, value = next(fields, name)\n"
  "  end\n"
  "  return true\n"
  "end\n"
  "\n"
  "local function build(message)\n"
  "  if begin(sb) ~= 0 then return false end\n"
  "  local key, value = next(message)\n"
  "  while key ~= nil do\n"
  "    local t, h, rc = type(value), string_headers[key], 1\n"
  "    if h then\n"
  "      if t == 'string' then rc = header_string(sb, h, value, #value) end\n"
  "    else\n"
  "      h = number_headers[key]\n"
  "      if h then\n"
  "        if t == 'number' then rc = header_number(sb, h, value) end\n"
  "      elseif key == 'Fields' and t == 'table' and add_fields(value) then\n"
  "        rc = 0\n"
  "      end\n"
  "    end\n"
  "    if rc ~= 0 then return false end\n"
  "    key, value = next(message, key)\n"
  "  end\n"
  "  return commit(sb) == 0\n"
  "end\n"
  "\n"
  "function inject_message(...)\n"
  "  local message = ...\n"
  "  if type(message) == 'table' and build(message) then return end\n"
  "  return slow(...)\n"
  "end\n";

/* The C side of the fast path: plain C, called from compiled code. */

static int fast_begin(sandbox *sb)
{
  if (!sb->batch) return -1;
  sandbox_inject_start(sb);
  sb->inject_pending = MSG_INJECT_COST;
  return 0;
}

static int fast_header_string(sandbox *sb, int h, const char *s, size_t len)
{
  msg *m = &sb->scratch;
  msg_span *span = msg_header_span(m, (msg_header)h);

  sb->inject_pending += len;
  return span && msg_store(m, s, len, span) ? 0 : -1;
}

static int fast_header_number(sandbox *sb, int h, double n)
{
  msg *m = &sb->scratch;

  sb->inject_pending += 8;
  switch (h) {
  case MSG_H_TIMESTAMP:
    if (!sandbox_fits_int64(n)) return -1;
    m->timestamp = (int64_t)n;
    return 0;
  case MSG_H_SEVERITY:
  case MSG_H_PID:
    if (!(n >= INT32_MIN && n <= INT32_MAX)) return -1;
    if (h == MSG_H_SEVERITY) m->severity = (int32_t)n, m->has_severity = true;
    else m->pid = (int32_t)n, m->has_pid = true;
    return 0;
  default:
    return -1;
  }
}

/* A scalar field's one value, or NULL when memory is exhausted. */
static msg_value *fast_field(sandbox *sb, const char *name, size_t len,
                             msg_value_type type)
{
  msg *m = &sb->scratch;
  msg_field *f = msg_add_field(m, name, len, type, 1);

  sb->inject_pending += len + 8;
  return f ? msg_field_values(m, f) : NULL;
}

static int fast_field_string(sandbox *sb, const char *name, size_t name_len,
                             const char *s, size_t len)
{
  msg_value *v = fast_field(sb, name, name_len, MSG_STRING);

  sb->inject_pending += len;
  return v && msg_store(&sb->scratch, s, len, &v->s) ? 0 : -1;
}

/* A number or a boolean (b: 0 or 1) field. */
static int fast_field_scalar(sandbox *sb, const char *name, size_t name_len,
                             int type, double n)
{
  msg_value *v = fast_field(sb, name, name_len, (msg_value_type)type);

  if (!v) return -1;
  if (type == MSG_BOOL) v->b = n != 0;
  else v->d = n;
  return 0;
}

/* Within the output limit, the message goes into the batch and its count
 * into the call's; past it, the slow path counts again and stops there. */
static int fast_commit(sandbox *sb)
{
  size_t emitted = sb->emitted + sb->inject_pending;

  if (sb->limits.output_limit && emitted > sb->limits.output_limit) return -1;
  msg_sort_fields(&sb->scratch, 0);
  if (!sandbox_inject_finish(sb)) return -1;
  sb->emitted = emitted;
  return 0;
}

static void push_entry(lua_State *L, const char *name, void *fn)
{
  lua_pushlightuserdata(L, fn);
  lua_setfield(L, -2, name);
}

static void push_headers(lua_State *L, bool numbers)
{
  lua_newtable(L);
  for (int h = 0; h < MSG_H_COUNT; h++) {
    bool number = h == MSG_H_TIMESTAMP || h == MSG_H_SEVERITY || h == MSG_H_PID;
    if (h == MSG_H_UUID || number != numbers) continue;
    lua_pushinteger(L, h);
    lua_setfield(L, -2, msg_header_name((msg_header)h));
  }
}

static int open_inject(lua_State *L)
{
  sandbox *sb = lua_touserdata(L, 1);

  sandbox_push_ffi_chunk(L, inject_source, sizeof inject_source - 1,
                         "=inject_message");
  lua_pushcfunction(L, sandbox_inject_message);
  lua_pushlightuserdata(L, sb);
  lua_newtable(L);
  push_entry(L, "begin", (void *)fast_begin);
  push_entry(L, "header_string", (void *)fast_header_string);
  push_entry(L, "header_number", (void *)fast_header_number);
  push_entry(L, "field_string", (void *)fast_field_string);
  push_entry(L, "field_scalar", (void *)fast_field_scalar);
  lua_pushinteger(L, MSG_DOUBLE);
  lua_setfield(L, -2, "number");
  lua_pushinteger(L, MSG_BOOL);
  lua_setfield(L, -2, "boolean");
  push_entry(L, "commit", (void *)fast_commit);
  push_headers(L, false);
  push_headers(L, true);
  lua_call(L, 6, 0);
  return 0;
}

int sandbox_inject_open(lua_State *L, sandbox *sb, char *err, size_t errlen)
{
  return sandbox_cpcall(L, open_inject, sb, "inject_message", err, errlen);
}
