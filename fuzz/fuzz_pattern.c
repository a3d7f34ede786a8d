/*
 * fuzz_pattern.c - lumberjit's Lua pattern matcher (src/runtime/pattern.c)
 * against LuaJIT's own, differentially.
 *
 * Input: [0] init (-2..5), then the pattern up to the first NUL byte, then
 * the subject; both at most 16 bytes (LuaJIT's matcher has no step limit:
 * short inputs keep its backtracking short). find, plain find, match,
 * gmatch and gsub must give the same results, or the same error, as
 * spec/c/test_pattern.c has it for its fixed cases. A match ours stops
 * (its step limit, PATTERN_CHECK_STEPS) is not compared.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "pattern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char compare[] =
  "local P, S, s, p, init = ...\n"
  "local function pack(...) return {n = select('#', ...), ...} end\n"
  "local function show(r)\n"
  "  local t = {} for i = 1, r.n do t[i] = string.format('%q', tostring(r[i])) end\n"
  "  return table.concat(t, ',')\n"
  "end\n"
  "local function gm(f) return function(s, p)\n"
  "  local out = {} for a, b in f(s, p) do out[#out + 1] = tostring(a) .. '|' .. tostring(b) end\n"
  "  return table.concat(out, ';')\n"
  "end end\n"
  "local function check(what, ours, theirs, ...)\n"
  "  local a, b = pack(pcall(ours, ...)), pack(pcall(theirs, ...))\n"
  "  local same = a.n == b.n\n"
  "  for i = 1, a.n do same = same and a[i] == b[i] end\n"
  "  if not same and not STOPPED then\n"
  "    error(what .. ': ours ' .. show(a) .. ' theirs ' .. show(b), 0)\n"
  "  end\n"
  "  STOPPED = false\n"
  "end\n"
  "check('find', P.find, S.find, s, p, init)\n"
  "check('find plain', P.find, S.find, s, p, init, true)\n"
  "check('match', P.match, S.match, s, p, init)\n"
  "check('gmatch', gm(P.gmatch), gm(S.gmatch), s, p)\n"
  "check('gsub', P.gsub, S.gsub, s, p, '<%0>')\n"
  "check('gsub %1', P.gsub, S.gsub, s, p, '%1', 2)\n";

static lua_State *L;
static int steps;

/* Ours stops a long match; what it gave is then not compared. */
static void stop_long(lua_State *l, void *ud)
{
  (void)ud;
  if (++steps > 200) {
    lua_pushboolean(l, 1);
    lua_setglobal(l, "STOPPED");
    luaL_error(l, "stopped");
  }
}

/* Pushes a shallow copy of the string table. */
static void push_string_copy(lua_State *l)
{
  lua_newtable(l);
  lua_getglobal(l, "string");
  lua_pushnil(l);
  while (lua_next(l, -2)) {
    lua_pushvalue(l, -2);
    lua_insert(l, -2);
    lua_settable(l, -5);
  }
  lua_pop(l, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!L) {
    L = luaL_newstate();
    if (!L) abort();
    luaL_openlibs(L);
    if (luaL_loadstring(L, compare) != 0) abort();
    lua_setglobal(L, "compare");
    push_string_copy(L);
    pattern_open(L, -1, stop_long, NULL);
    lua_setglobal(L, "P");
    push_string_copy(L);
    lua_setglobal(L, "S");
  }
  if (size < 1) return 0;
  int init = data[0] % 8 - 2;
  const uint8_t *nul = memchr(data + 1, 0, size - 1);
  size_t plen = nul ? (size_t)(nul - (data + 1)) : size - 1;
  const char *pat = (const char *)data + 1;
  const char *subj = nul ? (const char *)nul + 1 : "";
  size_t slen = nul ? size - 1 - plen - 1 : 0;
  if (plen > 16 || slen > 16) return 0;

  steps = 0;
  lua_getglobal(L, "compare");
  lua_getglobal(L, "P");
  lua_getglobal(L, "S");
  lua_pushlstring(L, subj, slen);
  lua_pushlstring(L, pat, plen);
  lua_pushinteger(L, init);
  if (lua_pcall(L, 5, 0, 0) != 0) {
    fprintf(stderr, "pattern \"%.*s\" subject \"%.*s\" init %d: %s\n",
            (int)plen, pat, (int)slen, subj, init, lua_tostring(L, -1));
    abort();
  }
  lua_gc(L, LUA_GCSTEP, 0);
  return 0;
}
