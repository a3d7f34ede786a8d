/* join.c - see join.h. */
#include "join.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "log.h"
#include "pattern.h"

#define JOIN_MAX_STEPS 1000000

struct join_matcher {
  lua_State *L;
  int find_ref;          /* string.find, on lumberjit's matcher */
  uint64_t steps;        /* of the current match */
  bool warned;
};

static void step_limit(lua_State *L, void *ud)
{
  join_matcher *jm = ud;

  jm->steps += PATTERN_CHECK_STEPS;
  if (jm->steps > JOIN_MAX_STEPS)
    luaL_error(L, "stopped after %d steps", JOIN_MAX_STEPS);
}

static int setup(lua_State *L)
{
  join_matcher *jm = lua_touserdata(L, 1);

  lua_pushcfunction(L, luaopen_string);
  lua_pushstring(L, LUA_STRLIBNAME);
  lua_call(L, 1, 1);
  pattern_open(L, -1, step_limit, jm);
  lua_getfield(L, -1, "find");
  jm->find_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

join_matcher *join_matcher_new(void)
{
  join_matcher *jm = calloc(1, sizeof *jm);

  if (!jm) return NULL;
  jm->L = luaL_newstate();
  if (!jm->L || lua_cpcall(jm->L, setup, jm) != 0) {
    join_matcher_free(jm);
    return NULL;
  }
  return jm;
}

void join_matcher_free(join_matcher *jm)
{
  if (!jm) return;
  if (jm->L) lua_close(jm->L);
  free(jm);
}

/* Whether pattern finds a match in the line; an error (a malformed pattern,
 * the step limit) counts as no match. On error, *why is set if given. */
static bool find(join_matcher *jm, const char *pattern, const char *line,
                 size_t len, char *why, size_t whylen)
{
  lua_State *L = jm->L;
  bool found;

  jm->steps = 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, jm->find_ref);
  lua_pushlstring(L, line, len);
  lua_pushstring(L, pattern);
  if (lua_pcall(L, 2, 1, 0) != 0) {
    if (why) snprintf(why, whylen, "%s", lua_tostring(L, -1));
    else if (!jm->warned)
      log_warning("multiline pattern \"%s\": %s; such lines count as not "
              "matching", pattern, lua_tostring(L, -1));
    jm->warned = true;
    lua_pop(L, 1);
    return false;
  }
  found = !lua_isnil(L, -1);
  lua_pop(L, 1);
  return found;
}

bool join_pattern_ok(const char *pattern, char *err, size_t errlen)
{
  join_matcher *jm = join_matcher_new();
  bool ok;

  if (!jm) {
    snprintf(err, errlen, "out of memory");
    return false;
  }
  err[0] = '\0';
  /* The matcher reads a pattern as it goes: these subjects take it far. */
  find(jm, pattern, "", 0, err, errlen);
  if (!err[0]) find(jm, pattern, "x", 1, err, errlen);
  ok = !err[0];
  join_matcher_free(jm);
  return ok;
}

/* ---- joining ---- */

void join_init(line_joiner *j, const join_rule *rule, join_matcher *jm)
{
  memset(j, 0, sizeof *j);
  j->rule = rule;
  j->jm = jm;
}

void join_free(line_joiner *j)
{
  buf_free(&j->held);
  buf_free(&j->suffix);
}

void join_flush(line_joiner *j, join_emit_fn emit, void *ud)
{
  if (!j->held_lines) return;
  if (j->suffix.len) buf_append(&j->held, j->suffix.data, j->suffix.len);
  emit(ud, j->held.data, j->held.len, j->held_pos);
  buf_clear(&j->held);
  buf_clear(&j->suffix);
  j->held_lines = 0;
}

static void hold(line_joiner *j, const char *line, size_t len, uint64_t pos)
{
  buf_append(&j->held, line, len);
  j->held_pos = pos;
  j->held_lines = 1;
}

/* A record at its limits is handed on; the next line starts another. */
static void check_limits(line_joiner *j, join_emit_fn emit, void *ud)
{
  if (j->held_lines >= j->rule->max_lines ||
      j->held.len + j->suffix.len >= j->rule->max_bytes)
    join_flush(j, emit, ud);
}

static void join_pattern(line_joiner *j, const char *line, size_t len,
                         uint64_t pos, join_emit_fn emit, void *ud)
{
  bool matched = find(j->jm, j->rule->pattern, line, len, NULL, 0);
  bool joins = j->rule->mode == JOIN_START ? !matched : matched;

  if (!j->held_lines || !joins || j->held.len + 1 + len > j->rule->max_bytes) {
    join_flush(j, emit, ud);
    hold(j, line, len, pos);
  } else {
    buf_append(&j->held, "\n", 1);
    buf_append(&j->held, line, len);
    j->held_lines++;
  }
}

/* CRI: "TIME STREAM TAG MESSAGE"; the tag's first letter is P or F. */
typedef struct {
  size_t stream, tag, msg; /* offsets; the stream ends before tag - 1 */
} cri_line;

static bool cri_fields(const char *line, size_t len, cri_line *c)
{
  const char *s1 = memchr(line, ' ', len), *s2, *s3;

  if (!s1) return false;
  s2 = memchr(s1 + 1, ' ', len - (size_t)(s1 + 1 - line));
  if (!s2 || (size_t)(s2 + 1 - line) >= len) return false;
  c->stream = (size_t)(s1 + 1 - line);
  c->tag = (size_t)(s2 + 1 - line);
  if (line[c->tag] != 'P' && line[c->tag] != 'F') return false;
  s3 = memchr(line + c->tag, ' ', len - c->tag);
  c->msg = s3 ? (size_t)(s3 + 1 - line) : len;
  return true;
}

/* Pieces of one line come from one stream. */
static bool same_stream(const char *a, const cri_line *ca, const char *b,
                        const cri_line *cb)
{
  size_t la = ca->tag - 1 - ca->stream, lb = cb->tag - 1 - cb->stream;

  return la == lb && memcmp(a + ca->stream, b + cb->stream, la) == 0;
}

static void join_cri(line_joiner *j, const char *line, size_t len,
                     uint64_t pos, join_emit_fn emit, void *ud)
{
  cri_line c, held;

  if (!cri_fields(line, len, &c)) {
    join_flush(j, emit, ud);
    emit(ud, line, len, pos);
    return;
  }
  if (j->held_lines && cri_fields(j->held.data, j->held.len, &held) &&
      !same_stream(j->held.data, &held, line, &c) && line[c.tag] == 'F') {
    /* A whole line of the other stream, between the pieces of one. */
    emit(ud, line, len, pos);
    return;
  }
  if (j->held_lines &&
      (!cri_fields(j->held.data, j->held.len, &held) ||
       !same_stream(j->held.data, &held, line, &c) ||
       j->held.len + (len - c.msg) > j->rule->max_bytes))
    join_flush(j, emit, ud);
  if (!j->held_lines) {
    if (line[c.tag] == 'F') {
      emit(ud, line, len, pos);
      return;
    }
    hold(j, line, len, pos);
    return;
  }
  buf_append(&j->held, line + c.msg, len - c.msg);
  j->held_lines++;
  if (line[c.tag] == 'F') {
    j->held.data[held.tag] = 'F'; /* the joined line is whole */
    join_flush(j, emit, ud);
  }
}

/* Docker's json-file: {"log":"TEXT","stream":...}. Sets where TEXT starts
 * and ends (its closing quote); false for another shape. */
static bool docker_log(const char *line, size_t len, size_t *start,
                       size_t *end)
{
  static const char head[] = "{\"log\":\"";

  if (len < sizeof head - 1 || memcmp(line, head, sizeof head - 1) != 0)
    return false;
  for (size_t i = sizeof head - 1; i < len; i++) {
    if (line[i] == '\\') {
      i++;
    } else if (line[i] == '"') {
      *start = sizeof head - 1;
      *end = i;
      return true;
    }
  }
  return false;
}

/* The text ends in the escape \n: the line was whole. */
static bool docker_whole(const char *line, size_t start, size_t end)
{
  size_t slashes = 0;

  if (end - start < 2 || line[end - 1] != 'n') return false;
  for (size_t i = end - 1; i > start && line[i - 1] == '\\'; i--) slashes++;
  return slashes % 2 == 1;
}

static void join_docker(line_joiner *j, const char *line, size_t len,
                        uint64_t pos, join_emit_fn emit, void *ud)
{
  size_t start, end;
  bool whole;

  if (!docker_log(line, len, &start, &end)) {
    join_flush(j, emit, ud);
    emit(ud, line, len, pos);
    return;
  }
  whole = docker_whole(line, start, end);
  if (j->held_lines &&
      j->held.len + j->suffix.len + (end - start) > j->rule->max_bytes)
    join_flush(j, emit, ud);
  if (!j->held_lines) {
    if (whole) {
      emit(ud, line, len, pos);
      return;
    }
    /* The first piece's stream and time stay: held is the entry up to its
     * text's end, suffix the rest. */
    hold(j, line, end, pos);
    buf_append(&j->suffix, line + end, len - end);
  } else {
    buf_append(&j->held, line + start, end - start);
    j->held_lines++;
  }
  if (whole) join_flush(j, emit, ud);
}

void join_line(line_joiner *j, const char *line, size_t len, uint64_t pos,
               uint64_t now_ms, join_emit_fn emit, void *ud)
{
  switch (j->rule->mode) {
  case JOIN_START:
  case JOIN_CONTINUE:
    join_pattern(j, line, len, pos, emit, ud);
    break;
  case JOIN_CRI:
    join_cri(j, line, len, pos, emit, ud);
    break;
  case JOIN_DOCKER:
    join_docker(j, line, len, pos, emit, ud);
    break;
  case JOIN_NONE:
    emit(ud, line, len, pos);
    return;
  }
  j->held_since_ms = now_ms;
  check_limits(j, emit, ud);
}
