/*
 * sandbox_span.c - record spans: a decoder names a part of the record it
 * is decoding by its positions, and inject_message copies those bytes of
 * the record into the message.
 *
 * Why: a string a decoder captures (the message text, the host name) was
 * made into a Lua string, hashed and interned, only to be copied into the
 * C message and swept by the GC later; that was a large share of a decoder
 * call. A span is a table the decoder makes once with record_span() and
 * reuses for every record, setting span[1] and span[2] (the first byte's
 * position and the position after the last, as lpeg.Cp gives them): no
 * string, no allocation per record.
 *
 * Spans are told apart by their metatable, which scripts can neither read
 * nor set (__metatable), so no other table passes for one. Positions are
 * checked against the current record whenever a span is read: a span kept
 * from an earlier record reads the current one, never outside it.
 */
#include <lauxlib.h>

#include "sandbox_internal.h"

/* The registry key of the spans' metatable. */
#define SPAN_MT_KEY "lumberjit.record_span"

static int api_record_span(lua_State *L)
{
  lua_createtable(L, 2, 0);
  lua_getfield(L, LUA_REGISTRYINDEX, SPAN_MT_KEY);
  lua_setmetatable(L, -2);
  return 1;
}

void sandbox_span_open(lua_State *L, sandbox *sb)
{
  lua_createtable(L, 0, 1);
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  sb->span_mt = lua_topointer(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, SPAN_MT_KEY);
  lua_register(L, "record_span", api_record_span);
}

bool sandbox_is_span(lua_State *L, const sandbox *sb, int idx)
{
  bool span;

  if (lua_type(L, idx) != LUA_TTABLE || !lua_getmetatable(L, idx))
    return false;
  span = lua_topointer(L, -1) == sb->span_mt;
  lua_pop(L, 1);
  return span;
}

void sandbox_span_get(lua_State *L, const sandbox *sb, int idx,
                      const char *name, const char **s, size_t *len)
{
  bool ok;

  if (idx < 0) idx = lua_gettop(L) + idx + 1;
  lua_rawgeti(L, idx, 1);
  lua_rawgeti(L, idx, 2);
  ok = lua_type(L, -2) == LUA_TNUMBER && lua_type(L, -1) == LUA_TNUMBER &&
       sandbox_span_text(sb, lua_tonumber(L, -2), lua_tonumber(L, -1), s, len);
  lua_pop(L, 2);
  if (!ok)
    luaL_error(L, "inject_message: %s is a record span whose positions are not "
               "in the record (1 <= span[1] <= span[2] <= %d)", name,
               sb->origin ? (int)sb->origin->len + 1 : 1);
}
