/*
 * config_keys.c - typed reads of a configuration table's keys, and the
 * errors that name the file, the line and the key (config_internal.h).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_internal.h"

const char *const config_role_names[] = {"input", "decoder", "encoder",
                                         "output", "filter"};

/* ---- paths ---- */

char *cfg_join_path(const char *dir, const char *name)
{
  size_t n = strlen(dir) + strlen(name) + 2;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s/%s", dir, name);
  return s;
}

char *cfg_parent_dir(const char *path)
{
  const char *slash = strrchr(path, '/');

  return slash == path ? strdup("/")
       : slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
}

/* ---- line numbers from the source text ---- */

/* The line, at or after `from` and in its source, that starts with `key =`
 * (also `["key"] =`); `from` when there is none. */
int cfg_key_line(const loader *ld, const char *key, int from)
{
  const config_source *src = cfg_source_at(ld, from);
  const char *p = ld->text + src->offset, *end = p + src->len;
  size_t klen = strlen(key);
  int line = src->first_line;

  /* Each source's last line ends with '\n' (config.c), so no compare runs
   * into the next one. */
  for (; p < end; line++) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *s = p;
    if (line >= from) {
      while (*s == ' ' || *s == '\t' || *s == '{' || *s == ',') s++;
      if (s[0] == '[' && (s[1] == '"' || s[1] == '\'')) s += 2;
      if (strncmp(s, key, klen) == 0 &&
          !(isalnum((unsigned char)s[klen]) || s[klen] == '_')) {
        s += klen;
        while (*s == ' ' || *s == '\t' || *s == '"' || *s == '\'' || *s == ']') s++;
        if (s[0] == '=' && s[1] != '=') return line;
      }
    }
    if (!eol) break;
    p = eol + 1;
  }
  return from;
}

const config_source *cfg_source_at(const loader *ld, int line)
{
  size_t i = ld->nsources;

  while (i > 1 && ld->sources[i - 1].first_line > line) i--;
  return &ld->sources[i - 1];
}

int cfg_fail(loader *ld, int line, const char *fmt, ...)
{
  const config_source *src = line > 0 && ld->nsources
      ? cfg_source_at(ld, line) : NULL;
  va_list ap;
  int n = src ? snprintf(ld->err, ld->errlen, "%s:%d: ", src->path,
                         line - src->first_line + 1)
              : snprintf(ld->err, ld->errlen, "%s:%d: ", ld->file, line);

  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < ld->errlen)
    vsnprintf(ld->err + n, ld->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- typed reads of the plugin table on top of the stack ---- */

/* How errors name the table: "output 'out' (stdout_output)", or "global
 * settings 'lumberjit'". */
static const char *table_label(const plugin_ctx *c, char *label, size_t len)
{
  if (c->type_name)
    snprintf(label, len, "%s '%s' (%s)", config_role_names[c->p->role], c->p->name,
             c->type_name);
  else
    snprintf(label, len, "global settings '%s'", c->p->name);
  return label;
}

int cfg_key_fail(plugin_ctx *c, const char *key, const char *fmt, ...)
{
  char what[512], label[256];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return cfg_fail(c->ld, cfg_key_line(c->ld, key, c->p->line),
              "%s: key '%s' %s", table_label(c, label, sizeof label), key, what);
}

int cfg_table_fail(plugin_ctx *c, const char *what)
{
  char label[256];

  return cfg_fail(c->ld, c->p->line, "%s: %s",
                  table_label(c, label, sizeof label), what);
}

lua_State *cfg_lua(plugin_ctx *c)
{
  return c->ld->L;
}

/* Pushes t[key] without metamethods (a config's metatable must not run
 * outside the protected evaluation); returns its Lua type. */
int cfg_get_key(lua_State *L, const char *key)
{
  lua_pushstring(L, key);
  lua_rawget(L, -2);
  return lua_type(L, -1);
}

int cfg_read_string(plugin_ctx *c, const char *key, bool required,
                       char **out)
{
  lua_State *L = c->ld->L;
  int t = cfg_get_key(L, key);
  int rc = 0;

  if (t == LUA_TNIL) {
    if (required) rc = cfg_key_fail(c, key, "is required");
  } else if (t != LUA_TSTRING) {
    rc = cfg_key_fail(c, key, "must be a string, not a %s", lua_typename(L, t));
  } else if (!(*out = strdup(lua_tostring(L, -1)))) {
    rc = cfg_key_fail(c, key, "cannot be stored: out of memory");
  }
  lua_pop(L, 1);
  return rc;
}

/* A whole number in [0, max]; left unchanged when absent. */
int cfg_read_count(plugin_ctx *c, const char *key, double max,
                      uint64_t *out)
{
  lua_State *L = c->ld->L;
  int t = cfg_get_key(L, key);
  int rc = 0;

  if (t == LUA_TNUMBER) {
    double v = lua_tonumber(L, -1);
    if (!(v >= 0 && v <= max) || v != (double)(uint64_t)v) /* NaN too */
      rc = cfg_key_fail(c, key, "must be a whole number from 0 to %.0f", max);
    else
      *out = (uint64_t)v;
  } else if (t != LUA_TNIL) {
    rc = cfg_key_fail(c, key, "must be a number, not a %s", lua_typename(L, t));
  }
  lua_pop(L, 1);
  return rc;
}

/* A string, or a list of strings: *out becomes a NULL-terminated array. */
int cfg_read_list(plugin_ctx *c, const char *key, bool required,
                            char ***out)
{
  lua_State *L = c->ld->L;
  int t = cfg_get_key(L, key);
  size_t n = t == LUA_TTABLE ? lua_objlen(L, -1) : 1;
  char **list = NULL;
  int rc = 0;

  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return required ? cfg_key_fail(c, key, "is required") : 0;
  }
  if (t != LUA_TSTRING && t != LUA_TTABLE) {
    rc = cfg_key_fail(c, key, "must be a string or a list of strings, not a %s",
                  lua_typename(L, t));
  } else if (n == 0) {
    rc = cfg_key_fail(c, key, "must name at least one pattern");
  } else if (!(list = calloc(n + 1, sizeof *list))) {
    rc = cfg_key_fail(c, key, "cannot be stored: out of memory");
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (t == LUA_TTABLE) lua_rawgeti(L, -1, (int)i + 1);
    else lua_pushvalue(L, -1);
    if (lua_type(L, -1) != LUA_TSTRING)
      rc = cfg_key_fail(c, key, "item %zu must be a string, not a %s", i + 1,
                    lua_typename(L, lua_type(L, -1)));
    else if (!(list[i] = strdup(lua_tostring(L, -1))))
      rc = cfg_key_fail(c, key, "cannot be stored: out of memory");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (rc != 0) config_list_free(list);
  else *out = list;
  return rc;
}

int cfg_read_bool(plugin_ctx *c, const char *key, bool *out)
{
  lua_State *L = c->ld->L;
  int t = cfg_get_key(L, key);
  int rc = 0;

  if (t == LUA_TBOOLEAN) *out = lua_toboolean(L, -1);
  else if (t != LUA_TNIL)
    rc = cfg_key_fail(c, key, "must be true or false, not a %s", lua_typename(L, t));
  lua_pop(L, 1);
  return rc;
}

const char *cfg_file_kind(mode_t mode)
{
  return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO"
       : S_ISSOCK(mode) ? "a socket" : "a device";
}
