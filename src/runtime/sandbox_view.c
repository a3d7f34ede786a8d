/*
 * sandbox_view.c - read_message, read_next_field, inject_message_value and
 * inject_message_json for encoders, as Lua functions that read the C
 * message through LuaJIT's FFI.
 *
 * Why: a lua_CFunction cannot be compiled into a trace; every call to one
 * leaves compiled code, and an encoder makes a dozen such calls per
 * message. Written in Lua over FFI, the reads compile into the encoder's
 * own traces (measured: about 0.25 us per W3 message saved).
 *
 * Safety: the FFI library is handed only to the trusted chunk below, which
 * keeps it in upvalues; the sandbox has no debug library, so nothing can
 * reach them. The functions return only strings, numbers, booleans and
 * tables, never cdata, read only within the counts the C message states,
 * and read nothing when no message is current. The chunk checks that its
 * declaration of the message matches the C layout, field by field, and
 * refuses to run otherwise.
 */
#include <stddef.h>
#include <string.h>

#include <lauxlib.h>

#include "json_message.h"
#include "sandbox_internal.h"

static const char view_source[] =
  "local ffi, current_ptr, iter_ptr, layout, sandbox, fns, write_failed = ...\n"
  "ffi.cdef[[\n"
  "typedef struct { uint32_t off, len; } lj_span;\n"
  "typedef union { lj_span s; int64_t i; double d; bool b; } lj_value;\n"
  "typedef struct { lj_span name, representation; int32_t type;\n"
  "                 uint32_t first, count; } lj_field;\n"
  "typedef struct { const char *input; uint64_t position; bool is_offset;\n"
  "                 const char *bytes; size_t len; void *ack;\n"
  "                 const char *file, *from; uint64_t read_us; } lj_origin;\n"
  "typedef struct {\n"
  "  uint8_t uuid[16]; bool has_uuid; int64_t timestamp;\n"
  "  int32_t severity; bool has_severity; int32_t pid; bool has_pid;\n"
  "  lj_span type, logger, payload, env_version, hostname;\n"
  "  lj_field *fields; uint32_t nfields, fields_cap;\n"
  "  lj_value *values; uint32_t nvalues, values_cap;\n"
  "  char *arena; uint32_t arena_len, arena_cap;\n"
  "  lj_origin origin;\n"
  "} lj_msg;\n"
  "int memcmp(const void *a, const void *b, size_t n);\n"
  "typedef struct { int32_t (*json)(void *);\n"
  "                 int32_t (*bytes)(void *, const char *, size_t); } lj_view_fns;\n"
  "]]\n"
  "for key, want in pairs(layout) do\n"
  "  local ctype, field = key:match('^(lj_%w+)%.?(.*)$')\n"
  "  local got = field == '' and ffi.sizeof(ctype) or ffi.offsetof(ctype, field)\n"
  "  if got ~= want then\n"
  "    error('message layout mismatch at ' .. key .. ': C ' .. want .. ', FFI ' .. tostring(got))\n"
  "  end\n"
  "end\n"
  "\n"
  "local current = ffi.cast('const lj_msg *const *', current_ptr)\n"
  "local json = ffi.cast('const lj_view_fns *', fns).json\n"
  "local write_bytes = ffi.cast('const lj_view_fns *', fns).bytes\n"
  "local sb = ffi.cast('void *', sandbox)\n"
  "local iter = ffi.cast('uint32_t *', iter_ptr)\n"
  "local C, string_of, tonumber, tostring, type, error = ffi.C, ffi.string, tonumber, tostring, type, error\n"
  "local match = string.match\n"
  "local STRING, BYTES, INTEGER, DOUBLE = 0, 1, 2, 3\n"
  "\n"
  "local function message(who)\n"
  "  local m = current[0]\n"
  "  if m == nil then error(who .. ': there is no current message', 3) end\n"
  "  return m\n"
  "end\n"
  "local function span(m, s)\n"
  "  if s.len == 0 then return nil end\n"
  "  return string_of(m.arena + s.off, s.len)\n"
  "end\n"
  "local function value(m, f, i)\n"
  "  local v, t = m.values[f.first + i], f.type\n"
  "  if t == STRING or t == BYTES then return string_of(m.arena + v.s.off, v.s.len) end\n"
  "  if t == INTEGER then return tonumber(v.i) end\n"
  "  if t == DOUBLE then return v.d end\n"
  "  return v.b\n"
  "end\n"
  "local function find_field(m, name, fi)\n"
  "  local len = #name\n"
  "  for i = 0, m.nfields - 1 do\n"
  "    local f = m.fields[i]\n"
  "    if f.name.len == len and C.memcmp(m.arena + f.name.off, name, len) == 0 then\n"
  "      if fi == 0 then return f end\n"
  "      fi = fi - 1\n"
  "    end\n"
  "  end\n"
  "end\n"
  "\n"
  "local headers = {\n"
  "  Timestamp = function(m) return tonumber(m.timestamp) end,\n"
  "  Severity = function(m) if m.has_severity then return m.severity end end,\n"
  "  Pid = function(m) if m.has_pid then return m.pid end end,\n"
  "  Uuid = function(m) if m.has_uuid then return string_of(m.uuid, 16) end end,\n"
  "  Type = function(m) return span(m, m.type) end,\n"
  "  Logger = function(m) return span(m, m.logger) end,\n"
  "  Payload = function(m) return span(m, m.payload) end,\n"
  "  EnvVersion = function(m) return span(m, m.env_version) end,\n"
  "  Hostname = function(m) return span(m, m.hostname) end,\n"
  "  raw = function(m)\n"
  "    if m.origin.bytes == nil then return '' end\n"
  "    return string_of(m.origin.bytes, m.origin.len)\n"
  "  end,\n"
  "}\n"
  "\n"
  "-- 'Fields[name]' -> 'name', kept for the names an encoder uses.\n"
  "local field_names, field_names_count = {}, 0\n"
  "local function field_name(name, who)\n"
  "  local found = field_names[name]\n"
  "  if found then return found end\n"
  "  if type(name) ~= 'string' then\n"
  "    error(\"bad argument #1 to '\" .. who .. \"' (string expected, got \" .. type(name) .. ')', 3)\n"
  "  end\n"
  "  found = match(name, '^Fields%[(.*)%]$')\n"
  "  if not found then error(who .. \": unknown name '\" .. name .. \"'\", 3) end\n"
  "  if field_names_count >= 1024 then field_names, field_names_count = {}, 0 end\n"
  "  field_names[name], field_names_count = found, field_names_count + 1\n"
  "  return found\n"
  "end\n"
  "local function index(n, what, who)\n"
  "  if n == nil then return 0 end\n"
  "  if type(n) ~= 'number' then\n"
  "    error(\"bad argument to '\" .. who .. \"' (\" .. what .. ' must be a number)', 3)\n"
  "  end\n"
  "  return n\n"
  "end\n"
  "\n"
  "function read_message(name, field_index, array_index)\n"
  "  local m = message('read_message')\n"
  "  local header = headers[name]\n"
  "  if header then return header(m) end\n"
  "  local fname = field_name(name, 'read_message')\n"
  "  local fi, ai = index(field_index, 'field_index', 'read_message'),\n"
  "        index(array_index, 'array_index', 'read_message')\n"
  "  if fi < 0 or ai < 0 or fi % 1 ~= 0 or ai % 1 ~= 0 then return nil end\n"
  "  local f = find_field(m, fname, fi)\n"
  "  if f == nil or ai >= f.count then return nil end\n"
  "  return value(m, f, ai)\n"
  "end\n"
  "\n"
  "function read_next_field()\n"
  "  local m = message('read_next_field')\n"
  "  local i = iter[0]\n"
  "  if i >= m.nfields then return nil end\n"
  "  iter[0] = i + 1\n"
  "  local f = m.fields[i]\n"
  "  local v\n"
  "  if f.count == 1 then\n"
  "    v = value(m, f, 0)\n"
  "  else\n"
  "    v = {}\n"
  "    for j = 0, f.count - 1 do v[j + 1] = value(m, f, j) end\n"
  "  end\n"
  "  return f.type, string_of(m.arena + f.name.off, f.name.len), v,\n"
  "         span(m, f.representation), f.count\n"
  "end\n"
  "\n"
  "function inject_message_json()\n"
  "  local failed = json(sb)\n"
  "  if failed ~= 0 then write_failed(failed, 'inject_message_json') end\n"
  "end\n"
  "\n"
  "-- The text headers and string fields are written from the message's own\n"
  "-- bytes: no Lua string is made of them.\n"
  "local text_headers = {\n"
  "  Type = function(m) return m.type end,\n"
  "  Logger = function(m) return m.logger end,\n"
  "  Payload = function(m) return m.payload end,\n"
  "  EnvVersion = function(m) return m.env_version end,\n"
  "  Hostname = function(m) return m.hostname end,\n"
  "}\n"
  "\n"
  "function inject_message_value(name, field_index, array_index)\n"
  "  local m = message('inject_message_value')\n"
  "  local header, p, len = text_headers[name]\n"
  "  if header then\n"
  "    local s = header(m)\n"
  "    if s.len == 0 then return false end\n"
  "    p, len = m.arena + s.off, s.len\n"
  "  elseif name == 'raw' then\n"
  "    if m.origin.bytes == nil then return false end\n"
  "    p, len = m.origin.bytes, m.origin.len\n"
  "  else\n"
  "    local fi = index(field_index, 'field_index', 'inject_message_value')\n"
  "    local ai = index(array_index, 'array_index', 'inject_message_value')\n"
  "    local f\n"
  "    if headers[name] == nil then\n"
  "      local fname = field_name(name, 'inject_message_value')\n"
  "      if fi < 0 or ai < 0 or fi % 1 ~= 0 or ai % 1 ~= 0 then return false end\n"
  "      f = find_field(m, fname, fi)\n"
  "      if f == nil or ai >= f.count then return false end\n"
  "    end\n"
  "    if f and (f.type == STRING or f.type == BYTES) then\n"
  "      local v = m.values[f.first + ai]\n"
  "      p, len = m.arena + v.s.off, v.s.len\n"
  "    else\n"
  "      -- A number, a boolean or the Uuid: as tostring writes it.\n"
  "      p = read_message(name, field_index, array_index)\n"
  "      if p == nil then return false end\n"
  "      if type(p) ~= 'string' then p = tostring(p) end\n"
  "      len = #p\n"
  "    end\n"
  "  end\n"
  "  local failed = write_bytes(sb, p, len)\n"
  "  if failed ~= 0 then write_failed(failed, 'inject_message_value') end\n"
  "  return true\n"
  "end\n";

/* What write_json and write_bytes say when they do not write. */
enum { WRITTEN, WRITE_NO_MESSAGE, WRITE_NO_MEMORY, WRITE_PAST_LIMIT };

/* inject_message_json's writing, called through FFI: appends the current
 * message to the encoder's output as one JSON object (json_message.h) and
 * counts it against the output limit. It cannot raise; write_failed does,
 * for what it returned. */
static int32_t write_json(void *at)
{
  sandbox *sb = at;
  size_t start;

  if (!sb->out || !sb->current) return WRITE_NO_MESSAGE;
  start = sb->out->len;
  if (!json_message(sb->out, sb->current)) {
    sb->out->len = start;
    return WRITE_NO_MEMORY;
  }
  return sandbox_emit(sb, sb->out->len - start) ? WRITTEN : WRITE_PAST_LIMIT;
}

/* inject_message_value's writing: appends len bytes at p (the current
 * message's, or a Lua string the chunk holds) within the output limit. */
static int32_t write_bytes(void *at, const char *p, size_t len)
{
  sandbox *sb = at;

  if (!sb->out || !sb->current) return WRITE_NO_MESSAGE;
  if (!sandbox_emit(sb, len)) return WRITE_PAST_LIMIT;
  return buf_append(sb->out, p, len) ? WRITTEN : WRITE_NO_MEMORY;
}

/* Handed to the chunk as data: a function pointer is not an object pointer. */
static const struct {
  int32_t (*json)(void *);
  int32_t (*bytes)(void *, const char *, size_t);
} view_fns = {write_json, write_bytes};

/* write_failed(why, function): the error for what write_json or
 * write_bytes returned, raised where the plugin called the function
 * (level 3: above the chunk's function and its helper). */
static int write_failed(lua_State *L)
{
  sandbox *sb = sandbox_of(L);
  int why = (int)lua_tointeger(L, 1);
  const char *fn = luaL_checkstring(L, 2);

  if (why == WRITE_PAST_LIMIT) sandbox_output_broken(L, sb, 2);
  luaL_where(L, 2);
  lua_pushfstring(L, why == WRITE_NO_MEMORY ? "%s: out of memory"
                                            : "%s: only encoders write messages",
                  fn);
  lua_concat(L, 2);
  return lua_error(L);
}

/* The C layout the chunk checks its declaration against: "type" is a size,
 * "type.field" an offset. */
static const struct {
  const char *key;
  size_t value;
} layout[] = {
  {"lj_span", sizeof(msg_span)},
  {"lj_span.len", offsetof(msg_span, len)},
  {"lj_value", sizeof(msg_value)},
  {"lj_value.d", offsetof(msg_value, d)},
  {"lj_value.b", offsetof(msg_value, b)},
  {"lj_field", sizeof(msg_field)},
  {"lj_field.representation", offsetof(msg_field, representation)},
  {"lj_field.type", offsetof(msg_field, type)},
  {"lj_field.first", offsetof(msg_field, first)},
  {"lj_field.count", offsetof(msg_field, count)},
  {"lj_origin", sizeof(msg_origin)},
  {"lj_origin.bytes", offsetof(msg_origin, bytes)},
  {"lj_origin.len", offsetof(msg_origin, len)},
  {"lj_msg", sizeof(msg)},
  {"lj_msg.has_uuid", offsetof(msg, has_uuid)},
  {"lj_msg.timestamp", offsetof(msg, timestamp)},
  {"lj_msg.severity", offsetof(msg, severity)},
  {"lj_msg.has_severity", offsetof(msg, has_severity)},
  {"lj_msg.pid", offsetof(msg, pid)},
  {"lj_msg.has_pid", offsetof(msg, has_pid)},
  {"lj_msg.type", offsetof(msg, type)},
  {"lj_msg.logger", offsetof(msg, logger)},
  {"lj_msg.payload", offsetof(msg, payload)},
  {"lj_msg.env_version", offsetof(msg, env_version)},
  {"lj_msg.hostname", offsetof(msg, hostname)},
  {"lj_msg.fields", offsetof(msg, fields)},
  {"lj_msg.nfields", offsetof(msg, nfields)},
  {"lj_msg.values", offsetof(msg, values)},
  {"lj_msg.arena", offsetof(msg, arena)},
  {"lj_msg.origin", offsetof(msg, origin)},
};

static void push_layout(lua_State *L)
{
  size_t n = sizeof layout / sizeof *layout;

  lua_createtable(L, 0, (int)n);
  for (size_t i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)layout[i].value);
    lua_setfield(L, -2, layout[i].key);
  }
}

static int open_view(lua_State *L)
{
  sandbox *sb = lua_touserdata(L, 1);

  sandbox_push_trusted(L, view_source, sizeof view_source - 1, "=message view");
  lua_pushlightuserdata(L, (void *)&sb->current);
  lua_pushlightuserdata(L, &sb->field_iter);
  push_layout(L);
  lua_pushlightuserdata(L, sb);
  lua_pushlightuserdata(L, (void *)&view_fns);
  lua_pushcfunction(L, write_failed);
  lua_call(L, 7, 0);
  return 0;
}

int sandbox_view_open(lua_State *L, sandbox *sb, char *err, size_t errlen)
{
  return sandbox_cpcall(L, open_view, sb, "read_message", err, errlen);
}
