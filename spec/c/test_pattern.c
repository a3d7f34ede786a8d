/*
 * test_pattern.c - pattern.c against LuaJIT's own string library, in one
 * state: find, match, gmatch and gsub give the same results and the same
 * errors over a corpus of chosen cases and thousands of random patterns;
 * and the interrupt ends a match that would backtrack for hours.
 */
#include <lauxlib.h>
#include <lualib.h>

#include "check.h"
#include "pattern.h"

static int interrupts;

static void count_only(lua_State *L, void *ud)
{
  (void)L;
  (void)ud;
  interrupts++;
}

static void stop_after_a_few(lua_State *L, void *ud)
{
  (void)ud;
  if (++interrupts >= 10) luaL_error(L, "interrupted");
}

/* Runs the comparison; the script returns the number of cases and a list
 * of the differences. */
static const char compare[] =
  "local P, S = ...\n"
  "local function pack(...) return {n = select('#', ...), ...} end\n"
  "local function same(a, b)\n"
  "  if a.n ~= b.n then return false end\n"
  "  for i = 1, a.n do if a[i] ~= b[i] then return false end end\n"
  "  return true\n"
  "end\n"
  "local function show(r)\n"
  "  local t = {} for i = 1, r.n do t[i] = tostring(r[i]) end\n"
  "  return table.concat(t, ',')\n"
  "end\n"
  "local diffs, cases = {}, 0\n"
  "local function check(what, ours, theirs, ...)\n"
  "  cases = cases + 1\n"
  "  local a, b = pack(pcall(ours, ...)), pack(pcall(theirs, ...))\n"
  "  if not same(a, b) and #diffs < 20 then\n"
  "    local args = pack(...)\n"
  "    diffs[#diffs + 1] = what .. '(' .. show(args) .. '): ours ' .. show(a) .. ' theirs ' .. show(b)\n"
  "  end\n"
  "end\n"
  "local function gm(f) return function(s, p)\n"
  "  local out = {} for a, b in f(s, p) do out[#out + 1] = tostring(a) .. '|' .. tostring(b) end\n"
  "  return table.concat(out, ';')\n"
  "end end\n"
  "local subjects = {'', 'a', 'hello world', 'aaa', ' key = value ; k2=v2 ',\n"
  "  'THE (quick) [brown] fox', '2026-11-23T08:00:00Z', 'a\\0b\\0c', 'f(a(b)c)d',\n"
  "  '<13>Nov 22 00:04:00 host app[12]: msg', 'x.y-z%w', '\\255\\1\\127 ', 'aXbXc'}\n"
  "local patterns = {'', 'a', '^a', 'a$', '^$', '.', '.-', '.*', 'a*', 'a+', 'a-', 'a?',\n"
  "  '%a+', '%A+', '%d%d', '%s*(%S+)%s*=%s*(%S+)', '()o()', '(a)(a)', '(a*(.))%1',\n"
  "  '[%a_][%w_]*', '[^%s]+', '[a-c]+', '[]]', '[^]]', '[a-]', '[%]]', '%b()', '%b[]',\n"
  "  '%f[%w]%w+', '%f[%W]', '%z', '[%z]', '^(%d+)-(%d+)-(%d+)T', '<(%d+)>(%a+) +(%d+)',\n"
  "  '(h)(e)(l)(l)(o)', 'x%.y%-z%%w', '%x+', '%u%l', '%p', '%c', 'X', 'b\\0c',\n"
  "  '%', '[a', '(a', 'a)', '%1', '(a)%2', '%b', '%bx', '%f', '%fx', '(()', '[%',\n"
  "  '%g', '(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)(%w+)'}\n"
  "for _, s in ipairs(subjects) do\n"
  "  for _, p in ipairs(patterns) do\n"
  "    for _, init in ipairs({1, 2, -1, -3, 0, 100}) do\n"
  "      check('find', P.find, S.find, s, p, init)\n"
  "      check('match', P.match, S.match, s, p, init)\n"
  "    end\n"
  "    check('find plain', P.find, S.find, s, p, 1, true)\n"
  "    check('gmatch', gm(P.gmatch), gm(S.gmatch), s, p)\n"
  "    for _, r in ipairs({'<%0>', '%1%1', '%%', '%2', 'x', 7}) do\n"
  "      check('gsub', P.gsub, S.gsub, s, p, r)\n"
  "      check('gsub n', P.gsub, S.gsub, s, p, r, 2)\n"
  "    end\n"
  "    check('gsub table', P.gsub, S.gsub, s, p, {a = 'A', hello = false, aaa = 1})\n"
  "    check('gsub function', P.gsub, S.gsub, s, p, function(a, b) return b and (a .. b) end)\n"
  "    check('gsub bad function', P.gsub, S.gsub, s, p, function() return {} end)\n"
  "    check('gsub bad repl', P.gsub, S.gsub, s, p, true)\n"
  "  end\n"
  "end\n"
  /* Random patterns from pattern pieces, against random subjects. */
  "local pieces = {'a', 'b', '.', '%a', '%d', '%s', '%W', '[ab]', '[^a]', '[a-c%d]',\n"
  "  '*', '+', '-', '?', '(', ')', '()', '%1', '%b()', '%f[%a]', '^', '$', '%', '[', ']'}\n"
  "local chars = {'a', 'b', 'c', '1', ' ', '(', ')', '[', ']', '%', 'A'}\n"
  "local seed = 42\n"
  "local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648 return seed % n + 1 end\n"
  "for _ = 1, 4000 do\n"
  "  local p, s = {}, {}\n"
  "  for i = 1, rand(6) do p[i] = pieces[rand(#pieces)] end\n"
  "  for i = 1, rand(12) - 1 do s[i] = chars[rand(#chars)] end\n"
  "  p, s = table.concat(p), table.concat(s)\n"
  "  check('find', P.find, S.find, s, p)\n"
  "  check('match', P.match, S.match, s, p, rand(4) - 2)\n"
  "  check('gmatch', gm(P.gmatch), gm(S.gmatch), s, p)\n"
  "  check('gsub', P.gsub, S.gsub, s, p, '<%0>')\n"
  "end\n"
  /* Methods on strings go through the string table. */
  "check('method', function(s, p) return s:match(p) end, S.match, 'k=v', '(%w)=(%w)')\n"
  "return cases, diffs\n";

/* Pushes a shallow copy of the string table. */
static void push_string_copy(lua_State *L)
{
  lua_newtable(L);
  lua_getglobal(L, "string");
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_settable(L, -5);
  }
  lua_pop(L, 1);
}

static void test_same_as_luajit(void)
{
  lua_State *L = luaL_newstate();
  int cases;

  luaL_openlibs(L);
  CHECK(luaL_loadstring(L, compare) == 0);
  push_string_copy(L);          /* P: ours */
  pattern_open(L, -1, count_only, NULL);
  push_string_copy(L);          /* S: LuaJIT's */
  lua_getglobal(L, "string");   /* strings' methods: ours */
  pattern_open(L, -1, count_only, NULL);
  lua_pop(L, 1);
  CHECK(lua_pcall(L, 2, 2, 0) == 0);
  cases = (int)lua_tointeger(L, 1);
  CHECK(cases > 30000);
  CHECK(lua_objlen(L, 2) == 0);
  for (int i = 1; i <= (int)lua_objlen(L, 2); i++) {
    lua_rawgeti(L, 2, i);
    fprintf(stderr, "difference: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  lua_close(L);
}

static void test_interrupt_ends_backtracking(void)
{
  lua_State *L = luaL_newstate();

  luaL_openlibs(L);
  lua_getglobal(L, "string");
  pattern_open(L, -1, stop_after_a_few, NULL);
  lua_pop(L, 1);
  interrupts = 0;
  /* 2^40 ways to try: hours without the interrupt. */
  CHECK(luaL_dostring(L, "return ('a'):rep(40):find(('a?'):rep(40) .. ('a'):rep(40))") != 0);
  CHECK_CONTAINS(lua_tostring(L, -1), "interrupted");
  CHECK(interrupts == 10);
  lua_pop(L, 1);
  /* The state is fine afterwards. */
  CHECK(luaL_dostring(L, "return ('key=value'):match('(%w+)=(%w+)')") == 0);
  CHECK(lua_gettop(L) == 2 && strcmp(lua_tostring(L, 2), "value") == 0);
  lua_close(L);
}

int main(void)
{
  test_same_as_luajit();
  test_interrupt_ends_backtracking();
  return check_summary();
}
