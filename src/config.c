/*
 * config.c - loads and validates the configuration file (see config.h).
 *
 * The file runs in a plain Lua state with the JIT off, only the base,
 * string, table and math libraries, an instruction budget and a memory
 * limit (see "evaluation" below). The globals it creates are then read with
 * the C API, and the files they name are checked (see "the files inputs
 * read and outputs write"). Line numbers are found in the source text: a
 * plugin's line is where `name =` starts a line, a key's line is the first
 * `key =` after it; the file:line of Lua syntax and runtime errors comes
 * from Lua itself.
 *
 * Sandboxed plugins (decoders, encoders) accept any extra key, as Hindsight
 * does: the whole table becomes the plugin's read_config settings. A key
 * within two edits of a runtime key (memroy_limit) is taken for a typo.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <luajit.h>

#include "buf.h"
#include "matcher.h"
#include "pattern.h"

#define CONFIG_INSTRUCTION_BUDGET 10000000
#define CONFIG_MEMORY_LIMIT (64u << 20)
#define CONFIG_MEMORY_SLACK (1u << 20) /* to raise the memory-limit error */
#define CONFIG_MAX_SIZE (1u << 20)
#define SETTINGS_MAX_DEPTH 16

/* Why the evaluation was stopped; once set, it never runs another
 * instruction (see evaluate). */
typedef enum { RUNNING, STOPPED_BUDGET, STOPPED_MEMORY } loader_stop;

typedef struct {
  const char *file;   /* as given */
  char *dir;          /* its directory, for relative plugin files */
  char *text;         /* the source, for line numbers */
  lua_State *L;
  char *err;
  size_t errlen;
  uint64_t pattern_steps;
  int globals_line;   /* where `lumberjit =` is, or 0 */
  size_t mem_used;    /* bytes the state holds */
  bool mem_enforce;   /* while the file runs: CONFIG_MEMORY_LIMIT applies */
  loader_stop stop;
  int stop_line;      /* the file's line running when it was stopped, or 0 */
} loader;

typedef struct {
  const char *name;
  config_role role;
  config_plugin_type type;
} plugin_type_info;

static const plugin_type_info plugin_types[] = {
  {"stdin_input", PLUGIN_INPUT, INPUT_STDIN},
  {"file_input", PLUGIN_INPUT, INPUT_FILE},
  {"tail_input", PLUGIN_INPUT, INPUT_TAIL},
  {"decoder", PLUGIN_DECODER, PLUGIN_SANDBOX},
  {"encoder", PLUGIN_ENCODER, PLUGIN_SANDBOX},
  {"stdout_output", PLUGIN_OUTPUT, OUTPUT_STDOUT},
  {"file_output", PLUGIN_OUTPUT, OUTPUT_FILE},
  {NULL, 0, 0}
};

static const char *const role_names[] = {"input", "decoder", "encoder", "output"};

/* Keys each plugin type knows; sandboxed plugins also take any other key. */
static const char *const input_keys[] = {"type", "decoder", "max_line",
                                         "long_lines", NULL};
static const char *const file_input_keys[] = {"type", "decoder", "max_line",
                                              "long_lines",
                                              "path", NULL};
static const char *const tail_input_keys[] = {
  "type", "decoder", "max_line", "long_lines", "paths", "exclude",
  "read_from_head",
  "scan_interval_ms", "rotate_wait_ms", "idle_close_ms",
  "last_line_timeout_ms", "max_open_files", "read_buffer", "path_field",
  "multiline", NULL
};
static const char *const sandbox_keys[] = {
  "type", "filename", "module_path", "instruction_limit", "cpu_limit_ms",
  "memory_limit", "output_limit", "input_limit", "mcode_limit_kb",
  "max_failures", "restart_after_ms", NULL
};
static const char *const output_keys[] = {"type", "encoder", "message_matcher",
                                          "newline", "flush_bytes", NULL};
static const char *const file_output_keys[] = {
  "type", "encoder", "message_matcher", "newline", "flush_bytes", "path", NULL
};
static const char *const global_keys[] = {
  "dead_letter_path", "dead_letter_output", "watchdog_interval_ms",
  "stop_timeout_ms", "state_dir", "checkpoint_interval_ms", "memory_budget",
  "workers", NULL
};

/* ---- line numbers from the source text ---- */

/* The 1-based line, at or after `from`, that starts with `key =` (also
 * `["key"] =`); `from` when there is none. */
static int find_key_line(const char *text, const char *key, int from)
{
  size_t klen = strlen(key);
  int line = 1;

  for (const char *p = text; *p; line++) {
    const char *eol = strchr(p, '\n');
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

static int fail(loader *ld, int line, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

static int fail(loader *ld, int line, const char *fmt, ...)
{
  va_list ap;
  int n = snprintf(ld->err, ld->errlen, "%s:%d: ", ld->file, line);

  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < ld->errlen)
    vsnprintf(ld->err + n, ld->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- typed reads of the plugin table on top of the stack ---- */

typedef struct {
  loader *ld;
  const config_plugin *p;
  const char *type_name;  /* NULL for the global settings */
} plugin_ctx;

/* How errors name the table: "output 'out' (stdout_output)", or "global
 * settings 'lumberjit'". */
static const char *table_label(const plugin_ctx *c, char *label, size_t len)
{
  if (c->type_name)
    snprintf(label, len, "%s '%s' (%s)", role_names[c->p->role], c->p->name,
             c->type_name);
  else
    snprintf(label, len, "global settings '%s'", c->p->name);
  return label;
}

static int key_fail(plugin_ctx *c, const char *key, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

static int key_fail(plugin_ctx *c, const char *key, const char *fmt, ...)
{
  char what[512], label[256];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return fail(c->ld, find_key_line(c->ld->text, key, c->p->line),
              "%s: key '%s' %s", table_label(c, label, sizeof label), key, what);
}

/* Pushes t[key] without metamethods (a config's metatable must not run
 * outside the protected evaluation); returns its Lua type. */
static int get_key(lua_State *L, const char *key)
{
  lua_pushstring(L, key);
  lua_rawget(L, -2);
  return lua_type(L, -1);
}

static int read_string(plugin_ctx *c, const char *key, bool required,
                       char **out)
{
  lua_State *L = c->ld->L;
  int t = get_key(L, key);
  int rc = 0;

  if (t == LUA_TNIL) {
    if (required) rc = key_fail(c, key, "is required");
  } else if (t != LUA_TSTRING) {
    rc = key_fail(c, key, "must be a string, not a %s", lua_typename(L, t));
  } else if (!(*out = strdup(lua_tostring(L, -1)))) {
    rc = key_fail(c, key, "cannot be stored: out of memory");
  }
  lua_pop(L, 1);
  return rc;
}

/* A whole number in [0, max]; left unchanged when absent. */
static int read_count(plugin_ctx *c, const char *key, double max,
                      uint64_t *out)
{
  lua_State *L = c->ld->L;
  int t = get_key(L, key);
  int rc = 0;

  if (t == LUA_TNUMBER) {
    double v = lua_tonumber(L, -1);
    if (!(v >= 0 && v <= max) || v != (double)(uint64_t)v) /* NaN too */
      rc = key_fail(c, key, "must be a whole number from 0 to %.0f", max);
    else
      *out = (uint64_t)v;
  } else if (t != LUA_TNIL) {
    rc = key_fail(c, key, "must be a number, not a %s", lua_typename(L, t));
  }
  lua_pop(L, 1);
  return rc;
}

static void free_list(char **list)
{
  for (char **p = list; p && *p; p++) free(*p);
  free(list);
}

/* A string, or a list of strings: *out becomes a NULL-terminated array. */
static int read_string_list(plugin_ctx *c, const char *key, bool required,
                            char ***out)
{
  lua_State *L = c->ld->L;
  int t = get_key(L, key);
  size_t n = t == LUA_TTABLE ? lua_objlen(L, -1) : 1;
  char **list = NULL;
  int rc = 0;

  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return required ? key_fail(c, key, "is required") : 0;
  }
  if (t != LUA_TSTRING && t != LUA_TTABLE) {
    rc = key_fail(c, key, "must be a string or a list of strings, not a %s",
                  lua_typename(L, t));
  } else if (n == 0) {
    rc = key_fail(c, key, "must name at least one pattern");
  } else if (!(list = calloc(n + 1, sizeof *list))) {
    rc = key_fail(c, key, "cannot be stored: out of memory");
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (t == LUA_TTABLE) lua_rawgeti(L, -1, (int)i + 1);
    else lua_pushvalue(L, -1);
    if (lua_type(L, -1) != LUA_TSTRING)
      rc = key_fail(c, key, "item %zu must be a string, not a %s", i + 1,
                    lua_typename(L, lua_type(L, -1)));
    else if (!(list[i] = strdup(lua_tostring(L, -1))))
      rc = key_fail(c, key, "cannot be stored: out of memory");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (rc != 0) free_list(list);
  else *out = list;
  return rc;
}

static int read_bool(plugin_ctx *c, const char *key, bool *out)
{
  lua_State *L = c->ld->L;
  int t = get_key(L, key);
  int rc = 0;

  if (t == LUA_TBOOLEAN) *out = lua_toboolean(L, -1);
  else if (t != LUA_TNIL)
    rc = key_fail(c, key, "must be true or false, not a %s", lua_typename(L, t));
  lua_pop(L, 1);
  return rc;
}

static size_t edit_distance(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b), row[64];

  if (lb >= 64 || la >= 64) return 64;
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

static bool in_list(const char *const *list, const char *key)
{
  for (; *list; list++)
    if (strcmp(*list, key) == 0) return true;
  return false;
}

/* Checks every key of the table on top of the stack against `known`. With
 * open_ended, unknown keys are allowed unless they look like a typo. */
static int check_keys(plugin_ctx *c, const char *const *known, bool open_ended)
{
  lua_State *L = c->ld->L;

  lua_pushnil(L);
  while (lua_next(L, -2)) {
    const char *key;
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      char label[256];
      if (open_ended) continue;
      lua_pop(L, 1);
      return fail(c->ld, c->p->line, "%s: keys must be names",
                  table_label(c, label, sizeof label));
    }
    key = lua_tostring(L, -1);
    if (!in_list(known, key)) {
      for (const char *const *k = known; *k; k++)
        if (edit_distance(key, *k) <= 2) {
          int rc = key_fail(c, key, "is unknown (did you mean '%s'?)", *k);
          lua_pop(L, 1);
          return rc;
        }
      if (!open_ended) {
        char names[512] = "";
        int rc;
        for (const char *const *k = known; *k; k++)
          snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                   k == known ? "" : ", ", *k);
        rc = key_fail(c, key, "is unknown (known: %s)", names);
        lua_pop(L, 1);
        return rc;
      }
    }
  }
  return 0;
}

/* ---- sandboxed plugins ---- */

static void append_lua_string(buf *b, const char *s, size_t len)
{
  buf_append(b, "\"", 1);
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    char esc[8];
    if (ch == '"' || ch == '\\') {
      esc[0] = '\\';
      esc[1] = (char)ch;
      buf_append(b, esc, 2);
    } else if (ch < 32 || ch == 127) {
      buf_append(b, esc, (size_t)snprintf(esc, sizeof esc, "\\%03u", ch));
    } else {
      buf_append(b, &s[i], 1);
    }
  }
  buf_append(b, "\"", 1);
}

/* Writes the value on top of the stack as Lua source. */
static int serialize(plugin_ctx *c, buf *b, const char *key, int depth)
{
  lua_State *L = c->ld->L;
  char num[64];
  size_t len;
  const char *s;

  switch (lua_type(L, -1)) {
  case LUA_TSTRING:
    s = lua_tolstring(L, -1, &len);
    append_lua_string(b, s, len);
    return 0;
  case LUA_TNUMBER:
    buf_append(b, num, (size_t)snprintf(num, sizeof num, "%.17g", lua_tonumber(L, -1)));
    return 0;
  case LUA_TBOOLEAN:
    s = lua_toboolean(L, -1) ? "true" : "false";
    buf_append(b, s, strlen(s));
    return 0;
  case LUA_TTABLE:
    if (depth >= SETTINGS_MAX_DEPTH)
      return key_fail(c, key, "nests tables deeper than %d", SETTINGS_MAX_DEPTH);
    buf_append(b, "{", 1);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      int kt = lua_type(L, -2);
      if (kt != LUA_TSTRING && kt != LUA_TNUMBER) {
        lua_pop(L, 2);
        return key_fail(c, key, "has a table with a %s key", lua_typename(L, kt));
      }
      buf_append(b, "[", 1);
      lua_pushvalue(L, -2);
      if (serialize(c, b, key, depth + 1) != 0) {
        lua_pop(L, 3);
        return -1;
      }
      lua_pop(L, 1);
      buf_append(b, "]=", 2);
      if (serialize(c, b, key, depth + 1) != 0) {
        lua_pop(L, 2);
        return -1;
      }
      buf_append(b, ",", 1);
      lua_pop(L, 1);
    }
    buf_append(b, "}", 1);
    return 0;
  default:
    return key_fail(c, key, "has a %s value; settings are strings, numbers, "
                    "booleans and tables of them", luaL_typename(L, -1));
  }
}

static int read_settings(plugin_ctx *c, config_plugin *p)
{
  lua_State *L = c->ld->L;
  buf b = {0};
  int rc = 0;

  buf_append(&b, "return {", 8);
  lua_pushnil(L);
  while (lua_next(L, -2) && rc == 0) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
    buf_append(&b, "[", 1);
    lua_pushvalue(L, -2);
    rc = serialize(c, &b, key, 0);
    lua_pop(L, 1);
    buf_append(&b, "]=", 2);
    if (rc == 0) rc = serialize(c, &b, key, 0);
    buf_append(&b, ",", 1);
    lua_pop(L, 1);
  }
  if (rc != 0) {
    lua_pop(L, 1); /* the key lua_next left */
    buf_free(&b);
    return rc;
  }
  buf_append(&b, "}", 2); /* with the terminating NUL */
  p->settings = b.data;
  return 0;
}

static char *join_path(const char *dir, const char *name)
{
  size_t n = strlen(dir) + strlen(name) + 2;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s/%s", dir, name);
  return s;
}

/* What a file that is no regular file is, for errors. */
static const char *file_kind(mode_t mode)
{
  return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO"
       : S_ISSOCK(mode) ? "a socket" : "a device";
}

/* A plugin's Lua file: absolute, or relative to the config file's
 * directory, or to the bundled sandbox/ directory. The first that exists
 * must be a readable regular file: a FIFO would block the plugin's load. */
static int resolve_filename(plugin_ctx *c, config_plugin *p)
{
  const char *dirs[] = {c->ld->dir, LUMBERJIT_SANDBOX_DIR};
  char *given = NULL, *path = NULL;
  struct stat st;
  size_t i, n;
  int err = 0;

  if (read_string(c, "filename", true, &given) != 0) return -1;
  n = given[0] == '/' ? 1 : 2;
  for (i = 0; i < n; i++) {
    path = given[0] == '/' ? strdup(given) : join_path(dirs[i], given);
    if (!path || stat(path, &st) == 0) break;
    err = errno;
    free(path);
    path = NULL;
  }
  if (i == n && n == 1)
    key_fail(c, "filename", "names '%s', which is not a readable file: %s",
             given, strerror(err));
  else if (i == n)
    key_fail(c, "filename", "names '%s', which is not a readable file (looked "
             "in %s and %s)", given, c->ld->dir, LUMBERJIT_SANDBOX_DIR);
  else if (!path)
    key_fail(c, "filename", "cannot be stored: out of memory");
  else if (!S_ISREG(st.st_mode))
    key_fail(c, "filename", "names '%s', which is %s, not a regular file (%s)",
             given, file_kind(st.st_mode), path);
  else if (access(path, R_OK) != 0)
    key_fail(c, "filename", "names '%s', which is not a readable file (%s: %s)",
             given, path, strerror(errno));
  else
    p->filename = path;
  free(given);
  if (p->filename) return 0;
  free(path);
  return -1;
}

static int read_module_dirs(plugin_ctx *c, config_plugin *p)
{
  lua_State *L = c->ld->L;
  buf b = {0};
  int t = get_key(L, "module_path"), rc = 0;

  buf_append(&b, LUMBERJIT_MODULE_DIR, strlen(LUMBERJIT_MODULE_DIR));
  if (t == LUA_TSTRING) { /* one directory: make it a list of one */
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, 1);
    lua_remove(L, -2);
  } else if (t != LUA_TNIL && t != LUA_TTABLE)
    rc = key_fail(c, "module_path", "must be a directory or a list of them");
  if (rc == 0 && lua_type(L, -1) == LUA_TTABLE) {
    for (int i = 1; rc == 0; i++) {
      const char *d;
      char *abs;
      lua_rawgeti(L, -1, i);
      if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        break;
      }
      d = lua_tostring(L, -1);
      if (lua_type(L, -1) != LUA_TSTRING || strchr(d, ';')) {
        rc = key_fail(c, "module_path", "entry %d must be a directory name", i);
      } else {
        abs = d[0] == '/' ? strdup(d) : join_path(c->ld->dir, d);
        buf_append(&b, ";", 1);
        if (abs) buf_append(&b, abs, strlen(abs));
        free(abs);
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  buf_append(&b, "", 1);
  if (rc == 0) p->module_dirs = b.data;
  else buf_free(&b);
  return rc;
}

/* The sandbox limits a decoder or encoder may set, with their maxima. */
static const struct {
  const char *key;
  double max;
  size_t offset;
} limit_keys[] = {
  {"instruction_limit", 1e15, offsetof(sandbox_limits, instruction_limit)},
  {"cpu_limit_ms", 3600000, offsetof(sandbox_limits, cpu_limit_ms)},
  {"memory_limit", 1e12, offsetof(sandbox_limits, memory_limit)},
  {"output_limit", 1e12, offsetof(sandbox_limits, output_limit)},
  {"input_limit", 1e12, offsetof(sandbox_limits, input_limit)},
  {"mcode_limit_kb", 1 << 20, offsetof(sandbox_limits, mcode_limit_kb)},
  {"max_failures", 1e9, offsetof(sandbox_limits, max_failures)},
  {"restart_after_ms", 3600000, offsetof(sandbox_limits, restart_after_ms)},
};

static int read_limits(plugin_ctx *c, sandbox_limits *l)
{
  sandbox_limits_default(l);
  for (size_t i = 0; i < sizeof limit_keys / sizeof *limit_keys; i++)
    if (read_count(c, limit_keys[i].key, limit_keys[i].max,
                   (uint64_t *)((char *)l + limit_keys[i].offset)) != 0)
      return -1;
  return 0;
}

/* ---- one plugin ---- */

static int read_long_lines(plugin_ctx *c, long_line_rule *rule)
{
  static const char *const names[] = {"dead_letter", "split", "truncate"};
  char *name = NULL;
  int rc = 0;

  *rule = LONG_LINES_DEAD_LETTER;
  if (read_string(c, "long_lines", false, &name) != 0) return -1;
  if (!name) return 0;
  for (*rule = LONG_LINES_DEAD_LETTER; *rule <= LONG_LINES_TRUNCATE; (*rule)++)
    if (strcmp(name, names[*rule]) == 0) break;
  if (*rule > LONG_LINES_TRUNCATE)
    rc = key_fail(c, "long_lines", "must be \"dead_letter\", \"split\" or "
                  "\"truncate\", not \"%s\"", name);
  free(name);
  return rc;
}

/* The rules in join.h. Keys inside the table are named as keys of the
 * plugin's in errors. */
static int read_join_rule(plugin_ctx *c, join_rule *r)
{
  static const char *const keys[] = {"start", "continue", "cri", "docker",
                                     "max_lines", "max_bytes", "flush_ms",
                                     NULL};
  lua_State *L = c->ld->L;
  int t = get_key(L, "multiline"), rc, modes;
  char *start = NULL, *cont = NULL, why[256];
  bool cri = false, docker = false;

  *r = (join_rule){JOIN_NONE, NULL, 1000, 1u << 20, 1000};
  if (t != LUA_TTABLE) {
    lua_pop(L, 1);
    if (t == LUA_TNIL) return 0;
    return key_fail(c, "multiline", "must be a table such as { start = "
                    "\"^%%d\" }, not a %s", lua_typename(L, t));
  }
  rc = check_keys(c, keys, false) != 0 ||
       read_string(c, "start", false, &start) != 0 ||
       read_string(c, "continue", false, &cont) != 0 ||
       read_bool(c, "cri", &cri) != 0 || read_bool(c, "docker", &docker) != 0 ||
       read_count(c, "max_lines", 1e9, &r->max_lines) != 0 ||
       read_count(c, "max_bytes", 1u << 30, &r->max_bytes) != 0 ||
       read_count(c, "flush_ms", 3600000, &r->flush_ms) != 0 ? -1 : 0;
  lua_pop(L, 1);
  modes = (start != NULL) + (cont != NULL) + cri + docker;
  r->mode = start ? JOIN_START : cont ? JOIN_CONTINUE
          : cri ? JOIN_CRI : JOIN_DOCKER;
  r->pattern = start ? start : cont;
  if (start && cont) free(cont);
  if (rc != 0) return -1;
  if (modes != 1)
    return key_fail(c, "multiline", "needs one of start, continue, cri = "
                    "true or docker = true");
  if (r->max_lines < 1 || r->max_bytes < 1)
    return key_fail(c, "multiline", "max_lines and max_bytes must be at "
                    "least 1");
  if (r->pattern && !join_pattern_ok(r->pattern, why, sizeof why))
    return key_fail(c, start ? "start" : "continue", "is not a Lua pattern "
                    "lumberjit can use: %s", why);
  return 0;
}

/* Defaults in tail.h. */
static int read_tail(plugin_ctx *c, config_tail *t)
{
  uint64_t hour = 3600000;

  *t = (config_tail){.scan_interval_ms = 1000, .rotate_wait_ms = 5000,
                     .idle_close_ms = 60000, .last_line_timeout_ms = 1000,
                     .max_open_files = 1024, .read_buffer = 128u << 10};
  if (read_string_list(c, "paths", true, &t->paths) != 0 ||
      read_string_list(c, "exclude", false, &t->exclude) != 0 ||
      read_string(c, "path_field", false, &t->path_field) != 0 ||
      read_bool(c, "read_from_head", &t->read_from_head) != 0 ||
      read_count(c, "scan_interval_ms", hour, &t->scan_interval_ms) != 0 ||
      read_count(c, "rotate_wait_ms", hour, &t->rotate_wait_ms) != 0 ||
      read_count(c, "idle_close_ms", 24 * hour, &t->idle_close_ms) != 0 ||
      read_count(c, "last_line_timeout_ms", hour,
                 &t->last_line_timeout_ms) != 0 ||
      read_count(c, "max_open_files", 1u << 20, &t->max_open_files) != 0 ||
      read_count(c, "read_buffer", 64u << 20, &t->read_buffer) != 0 ||
      read_join_rule(c, &t->join) != 0)
    return -1;
  if (!t->path_field && !(t->path_field = strdup("path")))
    return key_fail(c, "path_field", "cannot be stored: out of memory");
  if (!*t->path_field) { /* "": no field */
    free(t->path_field);
    t->path_field = NULL;
  }
  if (t->scan_interval_ms < 10)
    return key_fail(c, "scan_interval_ms", "must be at least 10");
  if (t->max_open_files < 1)
    return key_fail(c, "max_open_files", "must be at least 1");
  if (t->read_buffer < 4096)
    return key_fail(c, "read_buffer", "must be at least 4096 bytes");
  return 0;
}

static int read_plugin(loader *ld, config_plugin *p, const plugin_type_info *ti)
{
  plugin_ctx c = {ld, p, ti->name};
  uint64_t v;

  p->role = ti->role;
  p->type = ti->type;
  switch (ti->role) {
  case PLUGIN_INPUT:
    if (check_keys(&c, ti->type == INPUT_FILE ? file_input_keys
                       : ti->type == INPUT_TAIL ? tail_input_keys : input_keys,
                   false) != 0)
      return -1;
    v = p->max_line = 1u << 20;
    if (read_count(&c, "max_line", 1u << 30, &v) != 0) return -1;
    if (v < 16) return key_fail(&c, "max_line", "must be at least 16 bytes");
    p->max_line = (size_t)v;
    if (read_long_lines(&c, &p->long_lines) != 0 ||
        read_string(&c, "decoder", false, &p->decoder) != 0)
      return -1;
    if (ti->type == INPUT_FILE && read_string(&c, "path", true, &p->path) != 0)
      return -1;
    return ti->type == INPUT_TAIL ? read_tail(&c, &p->tail) : 0;
  case PLUGIN_DECODER:
  case PLUGIN_ENCODER:
    if (check_keys(&c, sandbox_keys, true) != 0 || resolve_filename(&c, p) != 0 ||
        read_limits(&c, &p->limits) != 0 || read_module_dirs(&c, p) != 0)
      return -1;
    return read_settings(&c, p);
  case PLUGIN_OUTPUT: {
    char err[256];
    matcher *m;
    if (check_keys(&c, ti->type == OUTPUT_FILE ? file_output_keys : output_keys,
                   false) != 0 ||
        read_string(&c, "encoder", false, &p->encoder) != 0 ||
        read_string(&c, "message_matcher", true, &p->message_matcher) != 0)
      return -1;
    if (ti->type == OUTPUT_FILE && read_string(&c, "path", true, &p->path) != 0)
      return -1;
    p->newline = true;
    if (read_bool(&c, "newline", &p->newline) != 0) return -1;
    v = p->flush_bytes = 64u << 10;
    if (read_count(&c, "flush_bytes", 1u << 30, &v) != 0) return -1;
    p->flush_bytes = (size_t)v;
    m = matcher_compile(p->message_matcher, err, sizeof err);
    if (!m) return key_fail(&c, "message_matcher", "is not a valid matcher: %s", err);
    matcher_free(m);
    return 0;
  }
  }
  return -1;
}

static int read_globals(loader *ld, config *cfg, int line)
{
  config_plugin g = {.name = "lumberjit", .line = line};
  plugin_ctx c = {ld, &g, NULL};
  uint64_t v = cfg->watchdog_interval_ms, stop = cfg->stop_timeout_ms;
  uint64_t ckpt = cfg->checkpoint_interval_ms, workers = cfg->workers;
  char *dl_path = NULL;

  ld->globals_line = line;
  if (check_keys(&c, global_keys, false) != 0 ||
      read_string(&c, "dead_letter_path", false, &dl_path) != 0 ||
      read_string(&c, "dead_letter_output", false, &cfg->dead_letter_output) != 0 ||
      read_count(&c, "watchdog_interval_ms", 1000, &v) != 0 ||
      read_count(&c, "stop_timeout_ms", 3600000, &stop) != 0 ||
      read_string(&c, "state_dir", false, &cfg->state_dir) != 0 ||
      read_count(&c, "checkpoint_interval_ms", 3600000, &ckpt) != 0 ||
      read_count(&c, "memory_budget", 1e12, &cfg->memory_budget) != 0 ||
      read_count(&c, "workers", 256, &workers) != 0)
    return -1;
  if (workers < 1) return key_fail(&c, "workers", "must be at least 1");
  cfg->workers = (size_t)workers;
  if (cfg->memory_budget < (1u << 20))
    return key_fail(&c, "memory_budget", "must be at least 1 MiB (1048576)");
  if (ckpt < 1) return key_fail(&c, "checkpoint_interval_ms", "must be at least 1");
  cfg->stop_timeout_ms = (unsigned)stop;
  cfg->checkpoint_interval_ms = (unsigned)ckpt;
  if (v < 1) return key_fail(&c, "watchdog_interval_ms", "must be at least 1");
  cfg->watchdog_interval_ms = (unsigned)v;
  if (dl_path) {
    free(cfg->dead_letter_path);
    cfg->dead_letter_path = dl_path;
  }
  return 0;
}

/* ---- cross references ---- */

static int check_ref(loader *ld, const config *cfg, const config_plugin *p,
                     const char *key, const char *name, config_role role)
{
  if (!name || config_find(cfg, name, role)) return 0;
  return fail(ld, find_key_line(ld->text, key, p->line),
              "%s '%s': key '%s' names '%s', which is not a %s in this file",
              role_names[p->role], p->name, key, name, role_names[role]);
}

static int check_references(loader *ld, const config *cfg)
{
  bool has_input = false, has_output = false;
  const config_plugin *dl;

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    if (check_ref(ld, cfg, p, "decoder", p->decoder, PLUGIN_DECODER) != 0 ||
        check_ref(ld, cfg, p, "encoder", p->encoder, PLUGIN_ENCODER) != 0)
      return -1;
    has_input |= p->role == PLUGIN_INPUT;
    has_output |= p->role == PLUGIN_OUTPUT;
  }
  if (!has_input || !has_output)
    return fail(ld, 1, "the file defines no %s (a plugin table such as "
                "x = { type = \"%s\", ... })", has_input ? "output" : "input",
                has_input ? "stdout_output" : "stdin_input");
  if (cfg->dead_letter_output) {
    dl = config_find(cfg, cfg->dead_letter_output, PLUGIN_OUTPUT);
    if (!dl)
      return fail(ld, find_key_line(ld->text, "dead_letter_output", 1),
                  "global settings 'lumberjit': key 'dead_letter_output' "
                  "names '%s', which is not an output in this file",
                  cfg->dead_letter_output);
  }
  return 0;
}

/* ---- the files inputs read and outputs write ----
 *
 * Checked on every load, so that a run fails at its start rather than
 * half-way: a file an input reads must exist and not be a directory (FIFOs
 * and devices are fine, and stat never blocks on them, as open could); a
 * file an output appends to needs its directory; and no input may read a
 * file lumberjit itself writes, which would feed its output back to it
 * without end. Files are compared by device and inode, so out.log,
 * ./out.log, a symlink and a hard link to it are one file; an output that
 * does not exist yet cannot be what an input reads, since those exist.
 * Character devices are exempt: reading and writing /dev/null is no loop.
 */

typedef struct {
  char what[300];     /* "the file output 'out' writes" */
  const char *path;
  struct stat st;
  bool exists;
} written_file;

static int check_written(loader *ld, const char *who, const char *key,
                         int line, written_file *w)
{
  const char *slash = strrchr(w->path, '/');
  char *dir;
  struct stat ds;
  int err, rc = 0;

  w->exists = stat(w->path, &w->st) == 0;
  if (w->exists)
    return S_ISDIR(w->st.st_mode)
      ? fail(ld, line, "%s: cannot open %s for appending: it is a directory "
             "(key '%s')", who, w->path, key)
      : 0;
  err = errno;
  dir = slash == w->path ? strdup("/")
      : slash ? strndup(w->path, (size_t)(slash - w->path)) : strdup(".");
  if (!dir) return fail(ld, line, "out of memory");
  if (err != ENOENT)
    rc = fail(ld, line, "%s: cannot open %s for appending: %s (key '%s')",
              who, w->path, strerror(err), key);
  else if (stat(dir, &ds) != 0)
    rc = fail(ld, line, "%s: cannot open %s for appending: its directory %s "
              "does not exist (key '%s')", who, w->path, dir, key);
  free(dir);
  return rc;
}

static int check_read(loader *ld, const config_plugin *p, int line,
                      struct stat *st)
{
  if (stat(p->path, st) != 0)
    return fail(ld, line, "input '%s': cannot open %s: %s (key 'path')",
                p->name, p->path, strerror(errno));
  if (S_ISDIR(st->st_mode))
    return fail(ld, line, "input '%s': cannot read %s: it is a directory "
                "(key 'path')", p->name, p->path);
  return 0;
}

static int check_files(loader *ld, const config *cfg)
{
  written_file *w = calloc(cfg->nplugins + 1, sizeof *w);
  size_t nw = 0;
  int rc = 0;

  if (!w) return fail(ld, 1, "out of memory");
  for (size_t i = 0; i < cfg->nplugins && rc == 0; i++) {
    const config_plugin *p = &cfg->plugins[i];
    char who[256];
    if (p->type != OUTPUT_FILE) continue;
    snprintf(w[nw].what, sizeof w[nw].what, "the file output '%s' writes",
             p->name);
    snprintf(who, sizeof who, "output '%s'", p->name);
    w[nw].path = p->path;
    rc = check_written(ld, who, "path", find_key_line(ld->text, "path", p->line),
                       &w[nw++]);
  }
  if (rc == 0 && !cfg->dead_letter_output) {
    snprintf(w[nw].what, sizeof w[nw].what, "the dead-letter file");
    w[nw].path = cfg->dead_letter_path;
    rc = check_written(ld, "global settings 'lumberjit'", "dead_letter_path",
                       ld->globals_line ? find_key_line(ld->text,
                         "dead_letter_path", ld->globals_line) : 1,
                       &w[nw++]);
  }
  if (rc == 0 && cfg->state_dir) {
    struct stat st;
    if (stat(cfg->state_dir, &st) != 0 || !S_ISDIR(st.st_mode))
      rc = fail(ld, ld->globals_line ? find_key_line(ld->text, "state_dir",
                                                     ld->globals_line) : 1,
                "global settings 'lumberjit': key 'state_dir' names %s, which "
                "is not a directory", cfg->state_dir);
  }
  for (size_t i = 0; i < cfg->nplugins && rc == 0; i++) {
    const config_plugin *p = &cfg->plugins[i];
    int line = find_key_line(ld->text, "path", p->line);
    struct stat st;
    if (p->type != INPUT_FILE) continue;
    rc = check_read(ld, p, line, &st);
    for (size_t j = 0; j < nw && rc == 0; j++)
      if (w[j].exists && !S_ISCHR(st.st_mode) && st.st_dev == w[j].st.st_dev &&
          st.st_ino == w[j].st.st_ino)
        rc = fail(ld, line, "input '%s' reads %s ('%s' and '%s' are one file)",
                  p->name, w[j].what, p->path, w[j].path);
  }
  free(w);
  return rc;
}

/* ---- evaluation ----
 *
 * The count hook first runs after CONFIG_INSTRUCTION_BUDGET instructions;
 * the allocator notes when the state would hold more than
 * CONFIG_MEMORY_LIMIT. Either stops the file for good: the hook then runs
 * before every instruction and raises an error each time, so no pcall that
 * catches it can go on. Requests past the limit are granted up to
 * CONFIG_MEMORY_SLACK, so the next instruction reaches the hook and the
 * error gets its line; larger ones are refused (LuaJIT raises "not enough
 * memory"). The message is built from ld->stop, not from the error value,
 * which may be whatever a refused allocation left.
 */

static void budget_hook(lua_State *L, lua_Debug *ar);

static void stop_evaluation(loader *ld, loader_stop why)
{
  if (ld->stop != RUNNING) return;
  ld->stop = why;
  lua_sethook(ld->L, budget_hook, LUA_MASKCOUNT, 1);
}

static void stop_message(const loader *ld, char *out, size_t len)
{
  char line[32] = "";

  if (ld->stop_line > 0) snprintf(line, sizeof line, ":%d", ld->stop_line);
  if (ld->stop == STOPPED_BUDGET)
    snprintf(out, len, "%s%s: the configuration ran more than %d "
             "instructions", ld->file, line, CONFIG_INSTRUCTION_BUDGET);
  else
    snprintf(out, len, "%s%s: the configuration went over its memory limit "
             "of %u MiB", ld->file, line, CONFIG_MEMORY_LIMIT >> 20);
}

static void *config_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  loader *ld = ud;
  void *p;

  if (ptr == NULL) osize = 0; /* LuaJIT passes a type tag there */
  if (nsize == 0) {
    free(ptr);
    ld->mem_used -= osize;
    return NULL;
  }
  if (ld->mem_enforce && nsize > osize &&
      ld->mem_used - osize + nsize > CONFIG_MEMORY_LIMIT) {
    stop_evaluation(ld, STOPPED_MEMORY);
    if (ld->mem_used - osize + nsize > CONFIG_MEMORY_LIMIT + CONFIG_MEMORY_SLACK)
      return NULL;
  }
  p = realloc(ptr, nsize);
  if (p) ld->mem_used = ld->mem_used - osize + nsize;
  return p;
}

static void budget_hook(lua_State *L, lua_Debug *ar)
{
  char why[1024];
  void *ud;
  loader *ld;

  lua_getallocf(L, &ud);
  ld = ud;
  stop_evaluation(ld, STOPPED_BUDGET);
  if (ld->stop_line <= 0 && lua_getinfo(L, "l", ar)) ld->stop_line = ar->currentline;
  stop_message(ld, why, sizeof why);
  lua_pushstring(L, why);
  lua_error(L);
}

/* The pattern matcher's steps (see pattern.h) spend the same budget as
 * instructions, so a backtracking string.find ends like a loop does. */
static void pattern_step(lua_State *L, void *unused)
{
  char why[1024];
  lua_Debug ar;
  void *ud;
  loader *ld;

  (void)unused;
  lua_getallocf(L, &ud);
  ld = ud;
  ld->pattern_steps += PATTERN_CHECK_STEPS;
  if (ld->stop == RUNNING && ld->pattern_steps <= CONFIG_INSTRUCTION_BUDGET)
    return;
  stop_evaluation(ld, STOPPED_BUDGET);
  if (ld->stop_line <= 0 && lua_getstack(L, 1, &ar) && lua_getinfo(L, "l", &ar))
    ld->stop_line = ar.currentline;
  stop_message(ld, why, sizeof why);
  lua_pushstring(L, why);
  lua_error(L);
}

static int open_config_env(lua_State *L)
{
  static const char *const removed[] = {
    "dofile", "loadfile", "load", "loadstring", "require", "module",
    "getfenv", "setfenv", "newproxy", "collectgarbage", "print", NULL
  };
  lua_pushcfunction(L, luaopen_base);
  lua_call(L, 0, 0);
  lua_pushcfunction(L, luaopen_string);
  lua_call(L, 0, 0);
  lua_pushcfunction(L, luaopen_table);
  lua_call(L, 0, 0);
  lua_pushcfunction(L, luaopen_math);
  lua_call(L, 0, 0);
  for (const char *const *k = removed; *k; k++) {
    lua_pushnil(L);
    lua_setglobal(L, *k);
  }
  lua_getglobal(L, "string");
  pattern_open(L, -1, pattern_step, NULL);
  return 0;
}

static int compare_line(const void *a, const void *b)
{
  const config_plugin *pa = a, *pb = b;
  return (pa->line > pb->line) - (pa->line < pb->line);
}

/* Reads every global the file set that the base environment lacks. */
static int read_file_globals(loader *ld, config *cfg, int base_table)
{
  lua_State *L = ld->L;
  size_t cap = 0;

  lua_pushnil(L);
  while (lua_next(L, LUA_GLOBALSINDEX)) {
    const char *name;
    int line;
    const plugin_type_info *ti = NULL;
    config_plugin *p;

    lua_pushvalue(L, -2);
    lua_rawget(L, base_table);
    if (!lua_isnil(L, -1) || lua_type(L, -3) != LUA_TSTRING) {
      lua_pop(L, 2);
      continue;
    }
    lua_pop(L, 1);
    name = lua_tostring(L, -2);
    line = find_key_line(ld->text, name, 1);
    if (lua_type(L, -1) != LUA_TTABLE)
      return fail(ld, line, "global '%s' is a %s; a plugin is a table with a "
                  "type (use local for helper values)", name,
                  luaL_typename(L, -1));
    if (strcmp(name, "lumberjit") == 0) {
      if (read_globals(ld, cfg, line) != 0) return -1;
      lua_pop(L, 1);
      continue;
    }
    get_key(L, "type");
    if (lua_type(L, -1) == LUA_TSTRING)
      for (ti = plugin_types; ti->name; ti++)
        if (strcmp(ti->name, lua_tostring(L, -1)) == 0) break;
    if (!ti || !ti->name) {
      int kline = find_key_line(ld->text, "type", line);
      return fail(ld, lua_isnil(L, -1) ? line : kline,
                  "plugin '%s': key 'type' %s (one of stdin_input, file_input, "
                  "decoder, encoder, stdout_output, file_output)", name,
                  lua_isnil(L, -1) ? "is required" : "is unknown");
    }
    lua_pop(L, 1);
    if (cfg->nplugins == cap) {
      config_plugin *np;
      cap = cap ? cap * 2 : 8;
      np = realloc(cfg->plugins, cap * sizeof *np);
      if (!np) return fail(ld, line, "out of memory");
      cfg->plugins = np;
    }
    p = &cfg->plugins[cfg->nplugins++];
    memset(p, 0, sizeof *p);
    p->name = strdup(name);
    p->line = line;
    if (!p->name || read_plugin(ld, p, ti) != 0) return -1;
    lua_pop(L, 1);
  }
  qsort(cfg->plugins, cfg->nplugins, sizeof *cfg->plugins, compare_line);
  return 0;
}

/* xpcall, with the handler run once the error has unwound rather than
 * within its raise: an error the budget hook raises is raised with hooks
 * off, so a handler run there could loop for ever. A configuration has no
 * debug library, so the handler loses nothing it could read. */
static int config_xpcall(lua_State *L)
{
  int n = lua_gettop(L);

  luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_checkstack(L, n, "too many arguments");
  lua_pushvalue(L, 1);
  for (int i = 3; i <= n; i++) lua_pushvalue(L, i);
  if (lua_pcall(L, n - 2, LUA_MULTRET, 0) == 0) {
    lua_pushboolean(L, 1);
    lua_insert(L, n + 1);
    return lua_gettop(L) - n;
  }
  lua_pushvalue(L, 2);
  lua_insert(L, -2);
  lua_call(L, 1, 1);
  lua_pushboolean(L, 0);
  lua_insert(L, -2);
  return 2;
}

/* The message of a failed load or run: Lua's own, which names the line,
 * with the file put in front where it does not (error("x", 0), error(42));
 * an error value that is no string is described, never converted. */
static int eval_fail(loader *ld)
{
  lua_State *L = ld->L;
  size_t flen = strlen(ld->file);
  const char *text;

  ld->mem_enforce = false;
  if (ld->stop != RUNNING) {
    stop_message(ld, ld->err, ld->errlen);
    return -1;
  }
  text = lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER
      ? lua_tostring(L, -1) : NULL;
  if (!text)
    snprintf(ld->err, ld->errlen, "%s: error object is a %s value", ld->file,
             luaL_typename(L, -1));
  else if ((strncmp(text, ld->file, flen) == 0 && text[flen] == ':') ||
           strncmp(text, "...", 3) == 0) /* a long name Lua shortened */
    snprintf(ld->err, ld->errlen, "%s", text);
  else
    snprintf(ld->err, ld->errlen, "%s: %s", ld->file, text);
  return -1;
}

static int evaluate(loader *ld, config *cfg, size_t len)
{
  lua_State *L = ld->L;
  int base_table;

  luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
  if (lua_cpcall(L, open_config_env, NULL) != 0)
    return fail(ld, 0, "cannot prepare the configuration environment");
  lua_register(L, "xpcall", config_xpcall);
  /* Remember what the environment holds, to tell the file's globals. */
  lua_newtable(L);
  base_table = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, LUA_GLOBALSINDEX)) {
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, base_table);
    lua_pop(L, 1);
  }
  lua_pushfstring(L, "@%s", ld->file);
  if (luaL_loadbufferx(L, ld->text, len, lua_tostring(L, -1), "t") != 0)
    return eval_fail(ld);
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, CONFIG_INSTRUCTION_BUDGET);
  ld->mem_enforce = true;
  /* A tail call can end the file over the memory limit with no instruction
   * left to stop it. */
  if (lua_pcall(L, 0, 0, 0) != 0 || ld->stop != RUNNING) return eval_fail(ld);
  ld->mem_enforce = false;
  lua_sethook(L, NULL, 0, 0);
  lua_pop(L, 1);
  if (read_file_globals(ld, cfg, base_table) != 0 ||
      check_references(ld, cfg) != 0)
    return -1;
  return check_files(ld, cfg);
}

/* Reads the file into ld->text. It is opened without blocking and must be
 * a regular file: a FIFO would wait for a writer, a directory reads as an
 * empty file. */
static int read_source(loader *ld, size_t *len)
{
  int fd = open(ld->file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  ssize_t n = -1;

  *len = 0;
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(ld->err, ld->errlen, "%s: cannot open the configuration file: "
             "%s", ld->file, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    snprintf(ld->err, ld->errlen, "%s: the configuration file is %s, not a "
             "regular file", ld->file, file_kind(st.st_mode));
  } else {
    do {
      n = read(fd, ld->text + *len, CONFIG_MAX_SIZE + 1 - *len);
      if (n > 0) *len += (size_t)n;
    } while ((n > 0 && *len <= CONFIG_MAX_SIZE) || (n < 0 && errno == EINTR));
    if (n < 0)
      snprintf(ld->err, ld->errlen, "%s: cannot read the configuration file: "
               "%s", ld->file, strerror(errno));
  }
  if (fd >= 0) close(fd);
  return n < 0 ? -1 : 0;
}

int config_load(const char *path, config *cfg, char *err, size_t errlen)
{
  loader ld = {.file = path, .err = err, .errlen = errlen};
  const char *slash = strrchr(path, '/');
  size_t len;
  int rc;

  memset(cfg, 0, sizeof *cfg);
  cfg->file = strdup(path);
  cfg->dead_letter_path = strdup("dead-letter.log");
  cfg->watchdog_interval_ms = 10;
  cfg->stop_timeout_ms = 5000;
  cfg->checkpoint_interval_ms = 1000;
  cfg->memory_budget = 32u << 20;
  {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->workers = cores > 0 ? (size_t)cores : 1;
  }
  ld.dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
  ld.text = malloc(CONFIG_MAX_SIZE + 1);
  if (!cfg->file || !cfg->dead_letter_path || !ld.dir || !ld.text) {
    rc = fail(&ld, 0, "out of memory");
  } else if (read_source(&ld, &len) != 0) {
    rc = -1;
  } else if (len > CONFIG_MAX_SIZE) {
    rc = fail(&ld, 0, "larger than %u bytes", CONFIG_MAX_SIZE);
  } else {
    ld.text[len] = '\0';
    ld.L = lua_newstate(config_alloc, &ld);
    rc = ld.L ? evaluate(&ld, cfg, len)
              : fail(&ld, 0, "cannot create a Lua state (out of memory?)");
    if (ld.L) lua_close(ld.L);
  }
  free(ld.text);
  free(ld.dir);
  if (rc != 0) config_free(cfg);
  return rc;
}

void config_free(config *cfg)
{
  for (size_t i = 0; i < cfg->nplugins; i++) {
    config_plugin *p = &cfg->plugins[i];
    free(p->name);
    free(p->path);
    free(p->decoder);
    free(p->filename);
    free(p->settings);
    free(p->module_dirs);
    free(p->encoder);
    free(p->message_matcher);
    free_list(p->tail.paths);
    free_list(p->tail.exclude);
    free(p->tail.path_field);
    free(p->tail.join.pattern);
  }
  free(cfg->plugins);
  free(cfg->file);
  free(cfg->dead_letter_path);
  free(cfg->dead_letter_output);
  free(cfg->state_dir);
  memset(cfg, 0, sizeof *cfg);
}

const config_plugin *config_find(const config *cfg, const char *name,
                                 config_role role)
{
  for (size_t i = 0; i < cfg->nplugins; i++)
    if (cfg->plugins[i].role == role && strcmp(cfg->plugins[i].name, name) == 0)
      return &cfg->plugins[i];
  return NULL;
}
