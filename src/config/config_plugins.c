/*
 * config_plugins.c - the plugin types a configuration may name, the keys
 * each knows and how each reads them (config_internal.h).
 *
 * Sandboxed plugins (decoders, encoders) accept any extra key, as Hindsight
 * does: the whole table becomes the plugin's read_config settings. A key
 * within two edits of a runtime key (memroy_limit) is taken for a typo.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>

#include "buf.h"
#include "config_internal.h"
#include "data_dir.h"
#include "line_generator.h"
#include "matcher.h"
#include "syslog_output_config.h"

#define SETTINGS_MAX_DEPTH 16

/* Keys each plugin type knows; sandboxed plugins also take any other key. */
static const char *const input_keys[] = {"type", "decoder", "max_line",
                                         "long_lines", "keep_cr", NULL};
static const char *const file_input_keys[] = {"type", "decoder", "max_line",
                                              "long_lines", "keep_cr",
                                              "path", NULL};
static const char *const tail_input_keys[] = {
  "type", "decoder", "max_line", "long_lines", "keep_cr", "paths", "exclude",
  "read_from_head",
  "scan_interval_ms", "rotate_wait_ms", "idle_close_ms",
  "last_line_timeout_ms", "max_open_files", "read_buffer", "path_field",
  "multiline", NULL
};
static const char *const generator_input_keys[] = {"type", "decoder",
                                                   "format", "count", "rate",
                                                   "seed", NULL};
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
      return cfg_key_fail(c, key, "nests tables deeper than %d", SETTINGS_MAX_DEPTH);
    buf_append(b, "{", 1);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      int kt = lua_type(L, -2);
      if (kt != LUA_TSTRING && kt != LUA_TNUMBER) {
        lua_pop(L, 2);
        return cfg_key_fail(c, key, "has a table with a %s key", lua_typename(L, kt));
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
    return cfg_key_fail(c, key, "has a %s value; settings are strings, numbers, "
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
/* A plugin's Lua file: absolute, or relative to the config file's
 * directory, or to the bundled sandbox/ directory. The first that exists
 * must be a readable regular file: a FIFO would block the plugin's load. */
static int resolve_filename(plugin_ctx *c, config_plugin *p)
{
  const char *dirs[] = {c->ld->dir, data_dir_sandbox()};
  char *given = NULL, *path = NULL;
  struct stat st;
  size_t i, n;
  int err = 0;

  if (cfg_read_string(c, "filename", true, &given) != 0) return -1;
  n = given[0] == '/' ? 1 : 2;
  for (i = 0; i < n; i++) {
    path = given[0] == '/' ? strdup(given) : join_path(dirs[i], given);
    if (!path || stat(path, &st) == 0) break;
    err = errno;
    free(path);
    path = NULL;
  }
  if (i == n && n == 1)
    cfg_key_fail(c, "filename", "names '%s', which is not a readable file: %s",
             given, strerror(err));
  else if (i == n)
    cfg_key_fail(c, "filename", "names '%s', which is not a readable file (looked "
             "in %s and %s)", given, c->ld->dir, data_dir_sandbox());
  else if (!path)
    cfg_key_fail(c, "filename", "cannot be stored: out of memory");
  else if (!S_ISREG(st.st_mode))
    cfg_key_fail(c, "filename", "names '%s', which is %s, not a regular file (%s)",
             given, cfg_file_kind(st.st_mode), path);
  else if (access(path, R_OK) != 0)
    cfg_key_fail(c, "filename", "names '%s', which is not a readable file (%s: %s)",
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
  int t = cfg_get_key(L, "module_path"), rc = 0;

  buf_append_str(&b, data_dir_modules());
  if (t == LUA_TSTRING) { /* one directory: make it a list of one */
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, 1);
    lua_remove(L, -2);
  } else if (t != LUA_TNIL && t != LUA_TTABLE)
    rc = cfg_key_fail(c, "module_path", "must be a directory or a list of them");
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
        rc = cfg_key_fail(c, "module_path", "entry %d must be a directory name", i);
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
    if (cfg_read_count(c, limit_keys[i].key, limit_keys[i].max,
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
  if (cfg_read_string(c, "long_lines", false, &name) != 0) return -1;
  if (!name) return 0;
  for (*rule = LONG_LINES_DEAD_LETTER; *rule <= LONG_LINES_TRUNCATE; (*rule)++)
    if (strcmp(name, names[*rule]) == 0) break;
  if (*rule > LONG_LINES_TRUNCATE)
    rc = cfg_key_fail(c, "long_lines", "must be \"dead_letter\", \"split\" or "
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
  int t = cfg_get_key(L, "multiline"), rc, modes;
  char *start = NULL, *cont = NULL, why[256];
  bool cri = false, docker = false;

  *r = (join_rule){JOIN_NONE, NULL, 1000, 1u << 20, 1000};
  if (t != LUA_TTABLE) {
    lua_pop(L, 1);
    if (t == LUA_TNIL) return 0;
    return cfg_key_fail(c, "multiline", "must be a table such as { start = "
                    "\"^%%d\" }, not a %s", lua_typename(L, t));
  }
  rc = cfg_check_keys(c, keys, false) != 0 ||
       cfg_read_string(c, "start", false, &start) != 0 ||
       cfg_read_string(c, "continue", false, &cont) != 0 ||
       cfg_read_bool(c, "cri", &cri) != 0 || cfg_read_bool(c, "docker", &docker) != 0 ||
       cfg_read_count(c, "max_lines", 1e9, &r->max_lines) != 0 ||
       cfg_read_count(c, "max_bytes", 1u << 30, &r->max_bytes) != 0 ||
       cfg_read_count(c, "flush_ms", 3600000, &r->flush_ms) != 0 ? -1 : 0;
  lua_pop(L, 1);
  modes = (start != NULL) + (cont != NULL) + cri + docker;
  r->mode = start ? JOIN_START : cont ? JOIN_CONTINUE
          : cri ? JOIN_CRI : JOIN_DOCKER;
  r->pattern = start ? start : cont;
  if (start && cont) free(cont);
  if (rc != 0) return -1;
  if (modes != 1)
    return cfg_key_fail(c, "multiline", "needs one of start, continue, cri = "
                    "true or docker = true");
  if (r->max_lines < 1 || r->max_bytes < 1)
    return cfg_key_fail(c, "multiline", "max_lines and max_bytes must be at "
                    "least 1");
  if (r->pattern && !join_pattern_ok(r->pattern, why, sizeof why))
    return cfg_key_fail(c, start ? "start" : "continue", "is not a Lua pattern "
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
  if (cfg_read_list(c, "paths", true, &t->paths) != 0 ||
      cfg_read_list(c, "exclude", false, &t->exclude) != 0 ||
      cfg_read_string(c, "path_field", false, &t->path_field) != 0 ||
      cfg_read_bool(c, "read_from_head", &t->read_from_head) != 0 ||
      cfg_read_count(c, "scan_interval_ms", hour, &t->scan_interval_ms) != 0 ||
      cfg_read_count(c, "rotate_wait_ms", hour, &t->rotate_wait_ms) != 0 ||
      cfg_read_count(c, "idle_close_ms", 24 * hour, &t->idle_close_ms) != 0 ||
      cfg_read_count(c, "last_line_timeout_ms", hour,
                 &t->last_line_timeout_ms) != 0 ||
      cfg_read_count(c, "max_open_files", 1u << 20, &t->max_open_files) != 0 ||
      cfg_read_count(c, "read_buffer", 64u << 20, &t->read_buffer) != 0 ||
      read_join_rule(c, &t->join) != 0)
    return -1;
  if (!t->path_field && !(t->path_field = strdup("path")))
    return cfg_key_fail(c, "path_field", "cannot be stored: out of memory");
  if (!*t->path_field) { /* "": no field */
    free(t->path_field);
    t->path_field = NULL;
  }
  if (t->scan_interval_ms < 10)
    return cfg_key_fail(c, "scan_interval_ms", "must be at least 10");
  if (t->max_open_files < 1)
    return cfg_key_fail(c, "max_open_files", "must be at least 1");
  if (t->read_buffer < 4096)
    return cfg_key_fail(c, "read_buffer", "must be at least 4096 bytes");
  return 0;
}

/* ---- the types ---- */

int config_read_input(plugin_ctx *c, config_plugin *p)
{
  uint64_t v = p->max_line = 1u << 20;

  if (cfg_read_count(c, "max_line", 1u << 30, &v) != 0) return -1;
  if (v < 16) return cfg_key_fail(c, "max_line", "must be at least 16 bytes");
  p->max_line = (size_t)v;
  return read_long_lines(c, &p->long_lines) != 0 ||
         cfg_read_bool(c, "keep_cr", &p->keep_cr) != 0 ||
         cfg_read_string(c, "decoder", false, &p->decoder) != 0 ? -1 : 0;
}

static int read_file_input(plugin_ctx *c, config_plugin *p)
{
  return config_read_input(c, p) != 0 ||
         cfg_read_string(c, "path", true, &p->path) != 0 ? -1 : 0;
}

static int read_tail_input(plugin_ctx *c, config_plugin *p)
{
  return config_read_input(c, p) != 0 || read_tail(c, &p->tail) != 0 ? -1 : 0;
}

/* Defaults in generator_input.h. */
static int read_generator_input(plugin_ctx *c, config_plugin *p)
{
  config_generator *g = &p->generator;
  char *format = NULL;
  int rc;

  *g = (config_generator){.format = LINES_SYSLOG, .seed = 1};
  p->max_line = LINE_GENERATOR_MAX;
  if (cfg_read_string(c, "decoder", false, &p->decoder) != 0 ||
      cfg_read_string(c, "format", false, &format) != 0 ||
      cfg_read_count(c, "count", 1e15, &g->count) != 0 ||
      cfg_read_count(c, "rate", 1e9, &g->rate) != 0 ||
      cfg_read_count(c, "seed", 1e15, &g->seed) != 0)
    rc = -1;
  else if (format && (g->format = line_format_by_name(format)) < 0)
    rc = cfg_key_fail(c, "format", "must be \"w1\", \"syslog\" or \"nginx\", "
                      "not \"%s\"", format);
  else
    rc = 0;
  free(format);
  return rc;
}

static int read_sandbox(plugin_ctx *c, config_plugin *p)
{
  return resolve_filename(c, p) != 0 || read_limits(c, &p->limits) != 0 ||
         read_module_dirs(c, p) != 0 || read_settings(c, p) != 0 ? -1 : 0;
}

int config_read_output(plugin_ctx *c, config_plugin *p)
{
  uint64_t v = p->flush_bytes = 64u << 10;
  char err[256];
  matcher *m;

  p->newline = true;
  if (cfg_read_string(c, "encoder", false, &p->encoder) != 0 ||
      cfg_read_string(c, "message_matcher", true, &p->message_matcher) != 0 ||
      cfg_read_bool(c, "newline", &p->newline) != 0 ||
      cfg_read_count(c, "flush_bytes", 1u << 30, &v) != 0)
    return -1;
  p->flush_bytes = (size_t)v;
  m = matcher_compile(p->message_matcher, err, sizeof err);
  if (!m)
    return cfg_key_fail(c, "message_matcher", "is not a valid matcher: %s", err);
  matcher_free(m);
  return 0;
}

static int read_file_output(plugin_ctx *c, config_plugin *p)
{
  return config_read_output(c, p) != 0 ||
         cfg_read_string(c, "path", true, &p->path) != 0 ? -1 : 0;
}

static const plugin_type_info plugin_types[] = {
  {"stdin_input", PLUGIN_INPUT, INPUT_STDIN, input_keys, config_read_input},
  {"file_input", PLUGIN_INPUT, INPUT_FILE, file_input_keys, read_file_input},
  {"tail_input", PLUGIN_INPUT, INPUT_TAIL, tail_input_keys, read_tail_input},
  {"syslog_input", PLUGIN_INPUT, INPUT_SYSLOG, config_syslog_keys,
   config_read_syslog},
  {"generator_input", PLUGIN_INPUT, INPUT_GENERATOR, generator_input_keys,
   read_generator_input},
  {"decoder", PLUGIN_DECODER, PLUGIN_SANDBOX, sandbox_keys, read_sandbox},
  {"encoder", PLUGIN_ENCODER, PLUGIN_SANDBOX, sandbox_keys, read_sandbox},
  {"stdout_output", PLUGIN_OUTPUT, OUTPUT_STDOUT, output_keys,
   config_read_output},
  {"file_output", PLUGIN_OUTPUT, OUTPUT_FILE, file_output_keys,
   read_file_output},
  {"kafka_output", PLUGIN_OUTPUT, OUTPUT_KAFKA, config_kafka_keys,
   config_read_kafka},
  {"syslog_output", PLUGIN_OUTPUT, OUTPUT_SYSLOG, syslog_output_keys,
   syslog_output_read_config},
  {NULL, 0, 0, NULL, NULL}
};

const plugin_type_info *config_find_type(const char *name)
{
  for (const plugin_type_info *ti = plugin_types; ti->name; ti++)
    if (strcmp(ti->name, name) == 0) return ti;
  return NULL;
}

void config_type_names(char *out, size_t len)
{
  out[0] = '\0';
  for (const plugin_type_info *ti = plugin_types; ti->name; ti++)
    snprintf(out + strlen(out), len - strlen(out), "%s%s",
             ti == plugin_types ? "" : ", ", ti->name);
}

int config_read_plugin(loader *ld, config_plugin *p, const plugin_type_info *ti)
{
  plugin_ctx c = {ld, p, ti->name};

  p->role = ti->role;
  p->type = ti->type;
  if (cfg_check_keys(&c, ti->keys, ti->role == PLUGIN_DECODER ||
                                   ti->role == PLUGIN_ENCODER) != 0)
    return -1;
  return ti->read(&c, p);
}
