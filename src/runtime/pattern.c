/*
 * pattern.c - Lua string patterns with a step budget (see pattern.h).
 *
 * The matcher walks the pattern item by item. An item is one character
 * class (a literal, '.', a %-class, a [set]) with an optional quantifier
 * (? * + -), or a capture bracket, %b, %f or a back-reference %1-%9. It
 * recurses where it must be able to come back (a quantifier trying fewer or
 * more repetitions, a capture undone on failure) and loops otherwise; the
 * recursion is bounded by PATTERN_MAX_DEPTH, as LuaJIT bounds its own. Each
 * item tried and each character a quantifier scans is a step.
 *
 * The pattern ends at its first NUL byte, as in LuaJIT 2.1.
 */
#define _GNU_SOURCE /* memmem */
#include "pattern.h"

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#define PATTERN_MAX_DEPTH 200
#define PATTERN_ESC '%'
#define PATTERN_SPECIALS "^$*+?.([%-"

/* A capture's length while it is still open, and for a position capture. */
#define CAP_OPEN (-1)
#define CAP_POSITION (-2)

typedef struct {
  pattern_interrupt_fn fn;
  void *ud;
} pattern_hooks;

typedef struct {
  const char *src, *src_end; /* the subject */
  const char *pat_end;
  lua_State *L;
  const pattern_hooks *hooks;
  unsigned steps;
  int depth;
  int level;                 /* captures opened so far */
  struct {
    const char *at;
    ptrdiff_t len;
  } cap[LUA_MAXCAPTURES];
} matcher;

static void step(matcher *m)
{
  if (++m->steps < PATTERN_CHECK_STEPS) return;
  m->steps = 0;
  m->hooks->fn(m->L, m->hooks->ud);
}

/* ---- character classes ---- */

static bool in_class(int c, int cl)
{
  bool r;

  switch (tolower(cl)) {
  case 'a': r = isalpha(c); break;
  case 'c': r = iscntrl(c); break;
  case 'd': r = isdigit(c); break;
  case 'g': r = isgraph(c); break;
  case 'l': r = islower(c); break;
  case 'p': r = ispunct(c); break;
  case 's': r = isspace(c); break;
  case 'u': r = isupper(c); break;
  case 'w': r = isalnum(c); break;
  case 'x': r = isxdigit(c); break;
  case 'z': r = c == 0; break;
  default: return cl == c;
  }
  return isupper(cl) ? !r : r;
}

/* set points at '[', last at its closing ']'. */
static bool in_set(int c, const char *set, const char *last)
{
  bool want = true;
  const char *p = set + 1;

  if (*p == '^') {
    want = false;
    p++;
  }
  for (; p < last; p++) {
    if (*p == PATTERN_ESC) {
      p++;
      if (in_class(c, (unsigned char)*p)) return want;
    } else if (p[1] == '-' && p + 2 < last) {
      if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2]) return want;
      p += 2;
    } else if ((unsigned char)*p == c) {
      return want;
    }
  }
  return !want;
}

/* The end of the single class that starts at p. */
static const char *class_end(matcher *m, const char *p)
{
  if (*p == PATTERN_ESC) {
    if (p + 1 >= m->pat_end)
      luaL_error(m->L, "malformed pattern (ends with '%%')");
    return p + 2;
  }
  if (*p != '[') return p + 1;
  p++;
  if (*p == '^') p++;
  do { /* the first character of a set is itself, even ']' */
    if (p >= m->pat_end) luaL_error(m->L, "malformed pattern (missing ']')");
    if (*p++ == PATTERN_ESC && p < m->pat_end) p++;
  } while (*p != ']');
  return p + 1;
}

/* Whether the character at s (inside the subject) is in class p..ep. */
static bool class_has(const char *s, const char *p, const char *ep)
{
  int c = (unsigned char)*s;

  switch (*p) {
  case '.': return true;
  case PATTERN_ESC: return in_class(c, (unsigned char)p[1]);
  case '[': return in_set(c, p, ep - 1);
  default: return (unsigned char)*p == c;
  }
}

static bool one(const matcher *m, const char *s, const char *p, const char *ep)
{
  return s < m->src_end && class_has(s, p, ep);
}

/* ---- the matcher ---- */

static const char *match(matcher *m, const char *s, const char *p);

/* Greedy: take as many as fit, then give back one at a time. */
static const char *longest(matcher *m, const char *s, const char *p,
                           const char *ep)
{
  ptrdiff_t n = 0;

  while (one(m, s + n, p, ep)) {
    step(m);
    n++;
  }
  for (; n >= 0; n--) {
    const char *r = match(m, s + n, ep + 1);
    if (r) return r;
    step(m);
  }
  return NULL;
}

/* Lazy: take one more only when the rest does not match yet. */
static const char *shortest(matcher *m, const char *s, const char *p,
                            const char *ep)
{
  for (;;) {
    const char *r = match(m, s, ep + 1);
    if (r) return r;
    if (!one(m, s, p, ep)) return NULL;
    s++;
    step(m);
  }
}

static const char *open_capture(matcher *m, const char *s, const char *p,
                                ptrdiff_t len)
{
  const char *r;

  if (m->level >= LUA_MAXCAPTURES) luaL_error(m->L, "too many captures");
  m->cap[m->level].at = s;
  m->cap[m->level].len = len;
  m->level++;
  r = match(m, s, p);
  if (!r) m->level--;
  return r;
}

static const char *close_capture(matcher *m, const char *s, const char *p)
{
  int l = m->level - 1;
  const char *r;

  while (l >= 0 && m->cap[l].len != CAP_OPEN) l--;
  if (l < 0) luaL_error(m->L, "invalid pattern capture");
  m->cap[l].len = s - m->cap[l].at;
  r = match(m, s, p);
  if (!r) m->cap[l].len = CAP_OPEN;
  return r;
}

/* %1-%9: the same text as that capture. */
static const char *same_as(matcher *m, const char *s, int digit)
{
  int l = digit - '1';
  size_t len;

  if (l < 0 || l >= m->level || m->cap[l].len == CAP_OPEN)
    luaL_error(m->L, "invalid capture index");
  len = (size_t)m->cap[l].len;
  if ((size_t)(m->src_end - s) >= len && memcmp(m->cap[l].at, s, len) == 0)
    return s + len;
  return NULL;
}

/* %bxy: a balanced run from x to its matching y. */
static const char *balanced(matcher *m, const char *s, const char *p)
{
  int depth = 1;

  if (p + 1 >= m->pat_end) luaL_error(m->L, "unbalanced pattern");
  if (s >= m->src_end || *s != p[0]) return NULL;
  while (++s < m->src_end) {
    step(m);
    if (*s == p[1]) {
      if (--depth == 0) return s + 1;
    } else if (*s == p[0]) {
      depth++;
    }
  }
  return NULL;
}

/* %f[set]: between a character not in set and one in it. */
static const char *frontier(matcher *m, const char *s, const char *p,
                            const char **next)
{
  const char *ep;
  int before, here;

  if (*p != '[') luaL_error(m->L, "missing '[' after '%%f' in pattern");
  ep = class_end(m, p);
  before = s == m->src ? '\0' : (unsigned char)s[-1];
  here = s < m->src_end ? (unsigned char)*s : '\0';
  *next = ep;
  if (in_set(before, p, ep - 1) || !in_set(here, p, ep - 1)) return NULL;
  return s;
}

/* One item with its quantifier, then the rest of the pattern. */
static const char *match_item(matcher *m, const char *s, const char *p,
                              bool *more, const char **next)
{
  const char *ep = class_end(m, p);
  bool hit = one(m, s, p, ep);

  *more = false;
  switch (*ep) {
  case '?': {
    const char *r;
    if (hit && (r = match(m, s + 1, ep + 1))) return r;
    *more = true;
    *next = ep + 1;
    return s;
  }
  case '*': return longest(m, s, p, ep);
  case '+': return hit ? longest(m, s + 1, p, ep) : NULL;
  case '-': return shortest(m, s, p, ep);
  default:
    if (!hit) return NULL;
    *more = true;
    *next = ep;
    return s + 1;
  }
}

static const char *match(matcher *m, const char *s, const char *p)
{
  const char *r = s;

  if (++m->depth > PATTERN_MAX_DEPTH) luaL_error(m->L, "pattern too complex");
  while (r) {
    const char *next = NULL;
    bool more = false;
    step(m);
    if (p >= m->pat_end) break;
    if (*p == '(') {
      r = p[1] == ')' ? open_capture(m, r, p + 2, CAP_POSITION)
                      : open_capture(m, r, p + 1, CAP_OPEN);
      break;
    }
    if (*p == ')') {
      r = close_capture(m, r, p + 1);
      break;
    }
    if (*p == '$' && p + 1 == m->pat_end) {
      if (r != m->src_end) r = NULL;
      break;
    }
    if (*p == PATTERN_ESC && p[1] == 'b') {
      r = balanced(m, r, p + 2);
      p += 4;
      continue;
    }
    if (*p == PATTERN_ESC && p[1] == 'f') {
      r = frontier(m, r, p + 2, &p);
      continue;
    }
    if (*p == PATTERN_ESC && isdigit((unsigned char)p[1])) {
      r = same_as(m, r, (unsigned char)p[1]);
      p += 2;
      continue;
    }
    r = match_item(m, r, p, &more, &next);
    if (!more) break;
    p = next;
  }
  m->depth--;
  return r;
}

/* ---- captures onto the Lua stack ---- */

static void push_capture(matcher *m, int i, const char *s, const char *e)
{
  if (i >= m->level) {
    if (i != 0) luaL_error(m->L, "invalid capture index");
    lua_pushlstring(m->L, s, (size_t)(e - s)); /* the whole match */
  } else if (m->cap[i].len == CAP_OPEN) {
    luaL_error(m->L, "unfinished capture");
  } else if (m->cap[i].len == CAP_POSITION) {
    lua_pushinteger(m->L, m->cap[i].at - m->src + 1);
  } else {
    lua_pushlstring(m->L, m->cap[i].at, (size_t)m->cap[i].len);
  }
}

/* s NULL: only the explicit captures (find's extra results). */
static int push_captures(matcher *m, const char *s, const char *e)
{
  int n = m->level == 0 && s ? 1 : m->level;

  luaL_checkstack(m->L, n, "too many captures");
  for (int i = 0; i < n; i++) push_capture(m, i, s, e);
  return n;
}

static void matcher_init(matcher *m, lua_State *L, const char *src,
                         size_t len, const char *pat)
{
  m->L = L;
  m->hooks = lua_touserdata(L, lua_upvalueindex(1));
  m->steps = 0;
  m->src = src;
  m->src_end = src + len;
  m->pat_end = pat + strlen(pat);
}

static const char *match_at(matcher *m, const char *s, const char *p)
{
  m->level = 0;
  m->depth = 0;
  return match(m, s, p);
}

/* The start offset of find and match: 1-based, negative from the end. */
static size_t start_offset(lua_State *L, size_t len)
{
  lua_Integer init = luaL_optinteger(L, 3, 1);

  if (init < 0) init += (lua_Integer)len;
  else init--;
  if (init < 0) init = 0;
  return (size_t)init > len ? len : (size_t)init;
}

static int find_or_match(lua_State *L, bool find)
{
  size_t len;
  const char *src = luaL_checklstring(L, 1, &len);
  const char *p = luaL_checkstring(L, 2);
  const char *s = src + start_offset(L, len);
  bool anchored = *p == '^';
  matcher m;

  matcher_init(&m, L, src, len, p + anchored);
  p += anchored;
  do {
    const char *e = match_at(&m, s, p);
    if (e) {
      if (!find) return push_captures(&m, s, e);
      lua_pushinteger(L, s - src + 1);
      lua_pushinteger(L, e - src);
      return push_captures(&m, NULL, NULL) + 2;
    }
  } while (s++ < m.src_end && !anchored);
  lua_pushnil(L);
  return 1;
}

/* A pattern without special characters is a plain search, as in LuaJIT. */
static bool has_specials(const char *p, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (p[i] && strchr(PATTERN_SPECIALS, p[i])) return true;
  return false;
}

/* find with a 4th argument is sent to LuaJIT's own by the Lua wrapper. */
static int pattern_find(lua_State *L)
{
  size_t len, plen;
  const char *src = luaL_checklstring(L, 1, &len);
  const char *p = luaL_checklstring(L, 2, &plen);
  size_t at = start_offset(L, len);

  if (!has_specials(p, plen)) {
    const char *q = memmem(src + at, len - at, p, plen);
    if (!q) {
      lua_pushnil(L);
      return 1;
    }
    lua_pushinteger(L, q - src + 1);
    lua_pushinteger(L, (lua_Integer)(q - src + plen));
    return 2;
  }
  return find_or_match(L, true);
}

static int pattern_match(lua_State *L)
{
  return find_or_match(L, false);
}

/* gmatch's iterator; upvalues: hooks, subject, pattern, position. */
static int gmatch_next(lua_State *L)
{
  size_t len;
  const char *src = lua_tolstring(L, lua_upvalueindex(2), &len);
  const char *p = lua_tostring(L, lua_upvalueindex(3));
  size_t pos = (size_t)lua_tointeger(L, lua_upvalueindex(4));
  matcher m;

  matcher_init(&m, L, src, len, p);
  for (const char *s = src + pos; s <= m.src_end; s++) {
    const char *e = match_at(&m, s, p);
    if (e) {
      /* An empty match moves on by one, so the loop ends. */
      lua_pushinteger(L, e - src + (e == s));
      lua_replace(L, lua_upvalueindex(4));
      return push_captures(&m, s, e);
    }
  }
  return 0;
}

static int pattern_gmatch(lua_State *L)
{
  luaL_checkstring(L, 1);
  luaL_checkstring(L, 2);
  lua_settop(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, gmatch_next, 4);
  return 1;
}

/* gsub's string replacement: %0-%9 captures, %x a literal x. */
static void add_template(matcher *m, luaL_Buffer *b, const char *s,
                         const char *e)
{
  size_t len;
  const char *t = lua_tolstring(m->L, 3, &len);

  for (size_t i = 0; i < len; i++) {
    if (t[i] != PATTERN_ESC) {
      luaL_addchar(b, t[i]);
    } else if (!isdigit((unsigned char)t[++i])) {
      luaL_addchar(b, t[i]);
    } else if (t[i] == '0') {
      luaL_addlstring(b, s, (size_t)(e - s));
    } else {
      push_capture(m, t[i] - '1', s, e);
      luaL_addvalue(b);
    }
  }
}

static void add_replacement(matcher *m, luaL_Buffer *b, const char *s,
                            const char *e)
{
  lua_State *L = m->L;

  switch (lua_type(L, 3)) {
  case LUA_TFUNCTION: {
    int n;
    lua_pushvalue(L, 3);
    n = push_captures(m, s, e);
    lua_call(L, n, 1);
    break;
  }
  case LUA_TTABLE:
    push_capture(m, 0, s, e);
    lua_gettable(L, 3);
    break;
  default:
    add_template(m, b, s, e);
    return;
  }
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    lua_pushlstring(L, s, (size_t)(e - s)); /* nil or false: keep the text */
  } else if (!lua_isstring(L, -1)) {
    luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
  }
  luaL_addvalue(b);
}

static int pattern_gsub(lua_State *L)
{
  size_t len;
  const char *src = luaL_checklstring(L, 1, &len);
  const char *p = luaL_checkstring(L, 2);
  int type = lua_type(L, 3);
  lua_Integer max = luaL_optinteger(L, 4, (lua_Integer)len + 1);
  bool anchored = *p == '^';
  const char *s = src;
  lua_Integer n = 0;
  luaL_Buffer b;
  matcher m;

  luaL_argcheck(L, type == LUA_TNUMBER || type == LUA_TSTRING ||
                type == LUA_TFUNCTION || type == LUA_TTABLE, 3,
                "string/function/table expected");
  p += anchored;
  luaL_buffinit(L, &b);
  matcher_init(&m, L, src, len, p);
  while (n < max) {
    const char *e = match_at(&m, s, p);
    if (e) {
      n++;
      add_replacement(&m, &b, s, e);
    }
    if (e && e > s) s = e;
    else if (s < m.src_end) luaL_addchar(&b, *s++);
    else break;
    if (anchored) break;
  }
  luaL_addlstring(&b, s, (size_t)(m.src_end - s));
  luaL_pushresult(&b);
  lua_pushinteger(L, n);
  return 2;
}

/* string.find: plain searches go to LuaJIT's own find, which the JIT
 * compiles and which cannot backtrack. */
static const char find_wrapper[] =
  "local luajit_find, bounded_find = ...\n"
  "return function(s, p, init, plain)\n"
  "  if plain then return luajit_find(s, p, init, plain) end\n"
  "  return bounded_find(s, p, init)\n"
  "end\n";

void pattern_open(lua_State *L, int t, pattern_interrupt_fn fn, void *ud)
{
  static const luaL_Reg fns[] = {
    {"match", pattern_match}, {"gmatch", pattern_gmatch},
    {"gsub", pattern_gsub}, {NULL, NULL}
  };
  pattern_hooks *h;

  t = t < 0 && t > LUA_REGISTRYINDEX ? lua_gettop(L) + t + 1 : t;
  h = lua_newuserdata(L, sizeof *h);
  h->fn = fn;
  h->ud = ud;
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, f->func, 1);
    lua_setfield(L, t, f->name);
  }
  if (luaL_loadbuffer(L, find_wrapper, sizeof find_wrapper - 1, "=pattern") != 0)
    lua_error(L);
  lua_getfield(L, t, "find");
  lua_pushvalue(L, -3);
  lua_pushcclosure(L, pattern_find, 1);
  lua_call(L, 2, 1);
  lua_setfield(L, t, "find");
  lua_pop(L, 1); /* the hooks */
}
