/*
 * sandbox_api.c - Heka's plugin API inside a sandbox: read_config,
 * inject_message (decoders) and inject_payload (encoders).
 * sandbox/README.md is the user-facing contract.
 *
 * inject_message converts the script's table into a C message apart and
 * moves it into the call's batch once whole, so an error halfway (caught by
 * the script or not) leaves the batch as it was. sandbox_inject.c's fast
 * path does that for tables of plain scalars; what it does not take, and
 * every error, is done here through the Lua API. Every read of the table is
 * raw: no metamethod of the script's runs during the conversion, so nothing
 * can call back into it. Each message costs MSG_INJECT_COST bytes of the
 * output limit on top of its contents, so a loop of inject_message({}) ends
 * at the limit like any other output. read_message and read_next_field
 * live in sandbox_view.c: they hand the encoder single values of the C
 * message, so nothing is copied into Lua tables unless the script asks; so
 * does inject_message_json, which writes the message as JSON in C. Every
 * byte emitted counts against the output limit.
 */
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "sandbox_internal.h"

/* read_config(key): the plugin's setting; "Hostname", unless the plugin
 * sets it, is this machine's name, as Hindsight's read_config gives it
 * (the sandbox cannot ask the system itself). */
static int api_read_config(lua_State *L)
{
  char host[256];

  luaL_checkstring(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, SANDBOX_SETTINGS_KEY);
  lua_pushvalue(L, 1);
  lua_rawget(L, -2);
  if (lua_isnil(L, -1) && strcmp(lua_tostring(L, 1), "Hostname") == 0 &&
      gethostname(host, sizeof host) == 0) {
    host[sizeof host - 1] = '\0';
    lua_pushstring(L, host);
  }
  return 1;
}

/* ---- inject_message ---- */

static void check_mem(lua_State *L, bool ok)
{
  if (!ok) luaL_error(L, "inject_message: out of memory");
}

/* The text of a string or of a record span (sandbox_span.c) at idx; NULL
 * for any other value. */
static const char *text_at(lua_State *L, sandbox *sb, int idx,
                           const char *name, size_t *len)
{
  const char *s = NULL;

  if (lua_type(L, idx) == LUA_TSTRING) s = lua_tolstring(L, idx, len);
  else if (sandbox_is_span(L, sb, idx)) sandbox_span_get(L, sb, idx, name, &s, len);
  return s;
}

static void store_header_string(lua_State *L, sandbox *sb, msg *m,
                                msg_span *span, const char *key)
{
  size_t len;
  const char *s = text_at(L, sb, -1, key, &len);

  if (!s)
    luaL_error(L, "inject_message: %s must be a string, not a %s", key,
               luaL_typename(L, -1));
  sandbox_count_output(L, sb, len);
  check_mem(L, msg_store(m, s, len, span));
}

static lua_Number header_number(lua_State *L, const char *key)
{
  if (lua_type(L, -1) != LUA_TNUMBER)
    luaL_error(L, "inject_message: %s must be a number, not a %s", key,
               luaL_typename(L, -1));
  return lua_tonumber(L, -1);
}

/* Severity and Pid: converting an out-of-range double is undefined. */
static int32_t header_int32(lua_State *L, const char *key)
{
  lua_Number n = header_number(L, key);
  if (!(n >= INT32_MIN && n <= INT32_MAX))
    luaL_error(L, "inject_message: %s is out of range", key);
  return (int32_t)n;
}

static int hexval(int c)
{
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Uuid: 16 raw bytes, or the 36-character text form. */
static void store_uuid(lua_State *L, msg *m)
{
  size_t len;
  const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len)
                                                 : NULL;
  if (s && len == 16) {
    memcpy(m->uuid, s, 16);
  } else if (s && len == 36) {
    int n = 0;
    for (size_t i = 0; i < 36; i++) {
      int hi, lo;
      if (i == 8 || i == 13 || i == 18 || i == 23) {
        if (s[i] != '-') goto bad;
        continue;
      }
      hi = hexval(s[i]);
      lo = hexval(s[++i]);
      if (hi < 0 || lo < 0) goto bad;
      m->uuid[n++] = (uint8_t)(hi << 4 | lo);
    }
  } else {
    goto bad;
  }
  m->has_uuid = true;
  return;
bad:
  luaL_error(L, "inject_message: Uuid must be 16 bytes or 36 characters");
}

static msg_value_type value_type_of(lua_State *L, sandbox *sb, int idx,
                                    const char *name)
{
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: return MSG_STRING;
  case LUA_TNUMBER: return MSG_DOUBLE;
  case LUA_TBOOLEAN: return MSG_BOOL;
  default:
    if (sandbox_is_span(L, sb, idx)) return MSG_STRING;
    luaL_error(L, "inject_message: field '%s' has a %s value", name,
               luaL_typename(L, idx));
    return MSG_STRING;
  }
}

static void set_value(lua_State *L, sandbox *sb, msg *m, msg_value_type type,
                      int idx, uint32_t field, uint32_t i, const char *name)
{
  msg_value *v = msg_field_values(m, &m->fields[field]) + i;

  switch (type) {
  case MSG_STRING:
  case MSG_BYTES: {
    size_t len;
    const char *s = text_at(L, sb, idx, name, &len);
    msg_span span;
    if (!s) goto mismatch;
    sandbox_count_output(L, sb, len);
    check_mem(L, msg_store(m, s, len, &span));
    v->s = span;
    return;
  }
  case MSG_INTEGER:
    if (lua_type(L, idx) != LUA_TNUMBER) goto mismatch;
    if (!sandbox_fits_int64(lua_tonumber(L, idx)))
      luaL_error(L, "inject_message: field '%s' is out of the integer range", name);
    v->i = (int64_t)lua_tonumber(L, idx);
    break;
  case MSG_DOUBLE:
    if (lua_type(L, idx) != LUA_TNUMBER) goto mismatch;
    v->d = lua_tonumber(L, idx);
    break;
  case MSG_BOOL:
    if (lua_type(L, idx) != LUA_TBOOLEAN) goto mismatch;
    v->b = lua_toboolean(L, idx);
    break;
  }
  return;
mismatch:
  luaL_error(L, "inject_message: field '%s' mixes value types", name);
}

/* Adds one field from the value on top of the stack: a scalar, an array of
 * scalars, or {value = scalar|array, value_type = n, representation = s}. */
/* Pushes t[key] without metamethods. */
static void raw_field(lua_State *L, int t, const char *key)
{
  lua_pushstring(L, key);
  lua_rawget(L, t);
}

static void add_field(lua_State *L, sandbox *sb, msg *m, const char *name,
                      size_t name_len)
{
  int top = lua_gettop(L), val = top;
  msg_value_type type = MSG_STRING;
  bool typed = false, array;
  uint32_t count = 1, field;
  const char *rep = NULL;
  size_t rep_len = 0;
  msg_field *f;

  sandbox_count_output(L, sb, name_len);
  if (lua_type(L, top) == LUA_TTABLE && !sandbox_is_span(L, sb, top)) {
    raw_field(L, top, "value");
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
    } else {
      val = lua_gettop(L);
      raw_field(L, top, "value_type");
      if (!lua_isnil(L, -1)) {
        lua_Number t = lua_tonumber(L, -1);
        if (lua_type(L, -1) != LUA_TNUMBER || t < MSG_STRING || t > MSG_BOOL ||
            t != (int)t)
          luaL_error(L, "inject_message: field '%s' has an unknown value_type",
                     name);
        type = (msg_value_type)(int)t;
        typed = true;
      }
      raw_field(L, top, "representation");
      if (lua_type(L, -1) == LUA_TSTRING) rep = lua_tolstring(L, -1, &rep_len);
    }
  }
  array = lua_type(L, val) == LUA_TTABLE && !sandbox_is_span(L, sb, val);
  if (array) {
    count = (uint32_t)lua_objlen(L, val);
    if (count == 0) {
      lua_pushnil(L);
      luaL_error(L, lua_next(L, val)
                 ? "inject_message: field '%s' is a table with named keys: "
                   "a field's value is a string, number, boolean, array or "
                   "{value = ..., value_type = ...}"
                 : "inject_message: field '%s' is an empty array", name);
    }
    lua_rawgeti(L, val, 1);
    if (!typed) type = value_type_of(L, sb, -1, name);
    lua_pop(L, 1);
  } else if (!typed) {
    type = value_type_of(L, sb, val, name);
  }
  /* 8 bytes a value, counted before the values are allocated; strings
   * count their length on top as they are stored. */
  sandbox_count_output(L, sb, (size_t)count * 8);
  f = msg_add_field(m, name, name_len, type, count);
  check_mem(L, f != NULL);
  field = (uint32_t)(f - m->fields);
  if (rep) {
    sandbox_count_output(L, sb, rep_len);
    check_mem(L, msg_store(m, rep, rep_len, &m->fields[field].representation));
  }
  if (!array) {
    set_value(L, sb, m, type, val, field, 0, name);
  } else {
    for (uint32_t i = 0; i < count; i++) {
      lua_rawgeti(L, val, (int)i + 1);
      set_value(L, sb, m, type, lua_gettop(L), field, i, name);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
}

static void add_fields(lua_State *L, sandbox *sb, msg *m)
{
  int t = lua_gettop(L);
  uint32_t from = m->nfields;

  if (lua_type(L, t) != LUA_TTABLE)
    luaL_error(L, "inject_message: Fields must be a table, not a %s",
               luaL_typename(L, t));
  lua_pushnil(L);
  while (lua_next(L, t)) {
    size_t len;
    const char *name;
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "inject_message: field names must be strings");
    name = lua_tolstring(L, -2, &len);
    add_field(L, sb, m, name, len);
    lua_pop(L, 1);
  }
  msg_sort_fields(m, from);
}

/* One header key of the message table (value on top of the stack). */
static void set_header(lua_State *L, sandbox *sb, msg *m, const char *key,
                       size_t len)
{
  msg_header h = msg_header_by_name(key, len);

  switch (h) {
  case MSG_H_TIMESTAMP: {
    lua_Number ns = header_number(L, "Timestamp");
    if (!sandbox_fits_int64(ns)) /* so never INT64_MIN, the "unset" mark */
      luaL_error(L, "inject_message: Timestamp is out of range");
    m->timestamp = (int64_t)ns;
    break;
  }
  case MSG_H_SEVERITY:
    m->severity = header_int32(L, "Severity");
    m->has_severity = true;
    break;
  case MSG_H_PID:
    m->pid = header_int32(L, "Pid");
    m->has_pid = true;
    break;
  case MSG_H_TYPE:
  case MSG_H_LOGGER:
  case MSG_H_PAYLOAD:
  case MSG_H_HOSTNAME:
  case MSG_H_ENV_VERSION:
    store_header_string(L, sb, m, msg_header_span(m, h), msg_header_name(h));
    return;
  case MSG_H_UUID: store_uuid(L, m); break;
  default:
    if (len == 6 && memcmp(key, "Fields", 6) == 0) {
      add_fields(L, sb, m);
      return;
    }
    luaL_error(L, "inject_message: unknown key '%s' (header names are "
               "Timestamp, Type, Logger, Severity, Payload, EnvVersion, Pid, "
               "Hostname, Uuid and Fields)", key);
  }
  sandbox_count_output(L, sb, 8);
}

void sandbox_inject_start(sandbox *sb)
{
  msg *m = &sb->scratch;

  msg_reset(m);
  m->origin = *sb->origin;
  m->timestamp = INT64_MIN; /* unset: stamped with the time of injection */
}

bool sandbox_inject_finish(sandbox *sb)
{
  msg *m = &sb->scratch;

  /* One clock reading per batch, not per message: the time the batch's
   * first unstamped message was injected. A batch runs for well under a
   * millisecond; the reading cost as much as a twentieth of a W1 line. */
  if (m->timestamp == INT64_MIN) {
    if (!sb->batch_now_ns) sb->batch_now_ns = msg_now_ns();
    m->timestamp = sb->batch_now_ns;
  }
  return msg_batch_push(sb->batch, m);
}

static int api_inject_message(lua_State *L)
{
  sandbox *sb = sandbox_of(L);
  msg *m = &sb->scratch;

  if (!sb->batch)
    return luaL_error(L, "inject_message: only decoders and filters inject "
                      "messages");
  if (sandbox_inject_fast(L, sb)) return 0;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  sandbox_count_output(L, sb, MSG_INJECT_COST);
  sandbox_inject_start(sb);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    size_t len;
    const char *key;
    if (lua_type(L, -2) != LUA_TSTRING)
      return luaL_error(L, "inject_message: keys must be strings");
    key = lua_tolstring(L, -2, &len);
    set_header(L, sb, m, key, len);
    lua_pop(L, 1);
  }
  check_mem(L, sandbox_inject_finish(sb));
  return 0;
}

/* inject_payload(type, name, data...): appends the data to the encoder's
 * output. type and name are accepted for Heka compatibility. */
static int api_inject_payload(lua_State *L)
{
  sandbox *sb = sandbox_of(L);
  int n = lua_gettop(L);

  if (!sb->out) return luaL_error(L, "inject_payload: only encoders inject payloads");
  for (int i = 3; i <= n; i++) {
    size_t len;
    const char *s;
    if (!lua_isstring(L, i))
      return luaL_error(L, "inject_payload: argument %d is a %s, not a string",
                        i, luaL_typename(L, i));
    s = lua_tolstring(L, i, &len);
    sandbox_count_output(L, sb, len);
    if (!buf_append(sb->out, s, len))
      return luaL_error(L, "inject_payload: out of memory");
  }
  return 0;
}

int sandbox_api_open(lua_State *L, sandbox *sb, char *err, size_t errlen)
{
  lua_register(L, "read_config", api_read_config);
  if (sb->kind == SANDBOX_DECODER) {
    lua_register(L, "inject_message", api_inject_message);
    sandbox_inject_names(L, sb);
    sandbox_span_open(L, sb);
    return sandbox_record_open(L, sb, err, errlen);
  }
  if (sb->kind == SANDBOX_FILTER) {
    /* It reads the message as an encoder does, and injects as a decoder. */
    lua_register(L, "inject_message", api_inject_message);
    sandbox_inject_names(L, sb);
    return sandbox_view_open(L, sb, err, errlen);
  }
  lua_register(L, "inject_payload", api_inject_payload);
  return sandbox_view_open(L, sb, err, errlen);
}
