/*
 * config_roles.c - the keys every plugin of a role takes (plugin_type.h):
 * an input's decoder and line limits, an output's encoder and matcher; and
 * the sandboxed plugins' types: decoder, encoder and filter.
 *
 * Sandboxed plugins accept any extra key, as Hindsight does: the whole
 * table becomes the plugin's read_config settings. A key within two edits
 * of a runtime key (memroy_limit) is taken for a typo.
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
#include "matcher.h"

#define SETTINGS_MAX_DEPTH 16

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

static int serialize(plugin_ctx *c, buf *b, const char *key, int depth);

static int entry_cmp(const void *a, const void *b)
{
  const buf *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int d = memcmp(x->data, y->data, n);

  return d ? d : (x->len > y->len) - (x->len < y->len);
}

/* Writes the table on top of the stack as a Lua constructor, its entries
 * in byte order: the same settings make the same source at every load
 * (LuaJIT's table order varies from one state to the next), which is how
 * a reload tells a changed plugin (sandbox_shelf.h). */
static int serialize_table(plugin_ctx *c, buf *b, const char *key, int depth)
{
  lua_State *L = c->ld->L;
  buf *entries = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;

  lua_pushnil(L);
  while (rc == 0 && lua_next(L, -2)) {
    int kt = lua_type(L, -2);
    /* At the top (depth -1), each key names itself in errors. */
    const char *k = depth < 0 && kt == LUA_TSTRING ? lua_tostring(L, -2) : key;
    buf *e;
    if (kt != LUA_TSTRING && kt != LUA_TNUMBER) {
      lua_pop(L, 2);
      rc = cfg_key_fail(c, key, "has a table with a %s key",
                        lua_typename(L, kt));
      break;
    }
    if (n == cap) {
      buf *more = realloc(entries, (cap = cap ? 2 * cap : 8) * sizeof *more);
      if (!more) {
        lua_pop(L, 2);
        rc = cfg_key_fail(c, key, "out of memory");
        break;
      }
      entries = more;
    }
    e = &entries[n++];
    *e = (buf){0};
    buf_append(e, "[", 1);
    lua_pushvalue(L, -2);
    rc = serialize(c, e, k, depth + 1);
    lua_pop(L, 1);
    buf_append(e, "]=", 2);
    if (rc == 0) rc = serialize(c, e, k, depth + 1);
    buf_append(e, ",", 1);
    lua_pop(L, rc == 0 ? 1 : 2);
  }
  if (rc == 0) {
    qsort(entries, n, sizeof *entries, entry_cmp);
    buf_append(b, "{", 1);
    for (size_t i = 0; i < n; i++) buf_append(b, entries[i].data, entries[i].len);
    buf_append(b, "}", 1);
  }
  for (size_t i = 0; i < n; i++) buf_free(&entries[i]);
  free(entries);
  return rc;
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
    return serialize_table(c, b, key, depth);
  default:
    return cfg_key_fail(c, key, "has a %s value; settings are strings, numbers, "
                    "booleans and tables of them", luaL_typename(L, -1));
  }
}

static int read_settings(plugin_ctx *c, config_plugin *p)
{
  buf b = {0};

  buf_append(&b, "return ", 7);
  if (serialize_table(c, &b, p->name, -1) != 0) {
    buf_free(&b);
    return -1;
  }
  buf_append(&b, "", 1); /* the terminating NUL */
  p->lua_settings = b.data;
  return 0;
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
    path = given[0] == '/' ? strdup(given) : cfg_join_path(dirs[i], given);
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
        abs = d[0] == '/' ? strdup(d) : cfg_join_path(c->ld->dir, d);
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

/* The file, and the whole table as its read_config settings. */
static int read_plugin_file(plugin_ctx *c, void *settings)
{
  config_plugin *p = settings;

  return resolve_filename(c, p) != 0 || read_settings(c, p) != 0 ? -1 : 0;
}

static void free_plugin_file(void *settings)
{
  config_plugin *p = settings;

  free(p->filename);
  free(p->lua_settings);
  p->filename = p->lua_settings = NULL;
}

static int read_modules(plugin_ctx *c, void *settings)
{
  return read_module_dirs(c, settings);
}

static void free_modules(void *settings)
{
  config_plugin *p = settings;

  free(p->module_dirs);
  p->module_dirs = NULL;
}

#define P(field) offsetof(config_plugin, field)
#define LIMIT(field) (P(limits) + offsetof(sandbox_limits, field))

/* The limits' defaults are sandbox_limits_default's (sandbox.h):
 * spec/c/test_config_keys.c holds them equal. */
const config_key config_sandbox_keys[] = {
  {"filename", KEY_CUSTOM, 0, .required = true, .in_plugin = true,
   .read = read_plugin_file, .free = free_plugin_file, .value = "path",
   .help = "the plugin's Lua file: absolute, or relative to the config's "
           "directory, then to the bundled sandbox/"},
  {"module_path", KEY_CUSTOM, 0, .in_plugin = true, .read = read_modules,
   .free = free_modules, .value = "path or list",
   .help = "directories searched by require after the bundled lua_modules/"},
  {"instruction_limit", KEY_COUNT, LIMIT(instruction_limit), "0", 0, 1e15,
   .in_plugin = true, .help = "Lua instructions one call may run (0: none)"},
  {"cpu_limit_ms", KEY_COUNT, LIMIT(cpu_limit_ms), "100", 0, 3600000,
   .in_plugin = true, .help = "CPU time one call may take (0: none)"},
  {"memory_limit", KEY_COUNT, LIMIT(memory_limit), "8388608", 0, 1e12,
   .in_plugin = true, .help = "bytes the plugin's Lua state may hold"},
  {"output_limit", KEY_COUNT, LIMIT(output_limit), "65536", 0, 1e12,
   .in_plugin = true, .help = "bytes one call may make (held to a 32nd of "
   "memory_budget)"},
  {"input_limit", KEY_COUNT, LIMIT(input_limit), "65536", 0, 1e12,
   .in_plugin = true, .help = "the longest record it is given (0: none)"},
  {"mcode_limit_kb", KEY_COUNT, LIMIT(mcode_limit_kb), "2048", 0, 1 << 20,
   .in_plugin = true, .help = "KiB of machine code the JIT may make"},
  {"max_failures", KEY_COUNT, LIMIT(max_failures), "10", 0, 1e9,
   .in_plugin = true, .help = "failed calls in a row before it is stopped "
   "(0: never)"},
  {"restart_after_ms", KEY_COUNT, LIMIT(restart_after_ms), "1000", 0, 3600000,
   .in_plugin = true, .help = "a stopped plugin is loaded again after this "
   "(0: never)"},
  {NULL}
};

/* ---- the keys of every input and output ---- */

static int check_matcher(plugin_ctx *c, void *settings)
{
  config_plugin *p = settings;
  char err[256];
  matcher *m;

  if (cfg_read_string(c, "message_matcher", true, &p->message_matcher) != 0)
    return -1;
  m = matcher_compile(p->message_matcher, err, sizeof err);
  if (!m)
    return cfg_key_fail(c, "message_matcher", "is not a valid matcher: %s", err);
  matcher_free(m);
  return 0;
}

static void free_matcher(void *settings)
{
  config_plugin *p = settings;

  free(p->message_matcher);
  p->message_matcher = NULL;
}

static const char *const long_line_rules[] = {"dead_letter", "split",
                                              "truncate", NULL};

const config_key config_input_keys[] = {
  {"decoder", KEY_STRING, P(decoder), .in_plugin = true,
   .help = "the decoder its records go through; none: each record is a "
           "message's Payload"},
  {NULL}
};

const config_key config_lines_keys[] = {
  {"max_line", KEY_SIZE, P(max_line), "1048576", 16, 1u << 30,
   .in_plugin = true, .help = "the longest record, in bytes"},
  {"long_lines", KEY_CHOICE, P(long_lines), "dead_letter",
   .choices = long_line_rules, .in_plugin = true,
   .help = "a longer line: its pieces are dead letters, records of their "
           "own, or the first is kept"},
  {"keep_cr", KEY_BOOL, P(keep_cr), "false", .in_plugin = true,
   .help = "keep the CR of a line that ends in CR LF"},
  {NULL}
};

const config_key config_output_keys[] = {
  {"encoder", KEY_STRING, P(encoder), .in_plugin = true,
   .help = "the encoder that writes each message; none: its Payload"},
  {"message_matcher", KEY_CUSTOM, 0, .required = true, .in_plugin = true,
   .read = check_matcher, .free = free_matcher, .value = "matcher",
   .help = "which messages it takes (README: Message matchers)"},
  {"newline", KEY_BOOL, P(newline), "true", .in_plugin = true,
   .help = "end each record with a newline"},
  {"flush_bytes", KEY_SIZE, P(flush_bytes), "65536", 0, 1u << 30,
   .in_plugin = true, .help = "bytes queued before a write"},
  {NULL}
};

const plugin_type config_decoder_type = {
  .name = "decoder", .role = PLUGIN_DECODER, .flags = PLUGIN_SANDBOX,
  .summary = "a Lua plugin that makes messages of an input's records",
};

const plugin_type config_encoder_type = {
  .name = "encoder", .role = PLUGIN_ENCODER, .flags = PLUGIN_SANDBOX,
  .summary = "a Lua plugin that writes an output's messages",
};

static const char *const filter_modes[] = {"inline", "tap", NULL};

#define F(field) offsetof(config_filter, field)

static const config_key filter_keys[] = {
  {"message_matcher", KEY_CUSTOM, 0, .required = true, .in_plugin = true,
   .read = check_matcher, .free = free_matcher, .value = "matcher",
   .help = "which messages it takes (README: Message matchers)"},
  {"mode", KEY_CHOICE, F(mode), "inline", .choices = filter_modes,
   .help = "inline: a message it takes is replaced by what it injects for "
           "it (nothing drops it); tap: messages go on, and what it injects "
           "is routed too"},
  {"ticker_interval_ms", KEY_COUNT, F(ticker_interval_ms), "0", 0, 86400000,
   .help = "how often its timer_event(ns) runs (0: never)"},
  /* A filter that modifies a message injects all of it again: as much as
   * the longest record (max_line's 1 MiB), not a decoder's 64 KiB. */
  {"output_limit", KEY_COUNT, LIMIT(output_limit), "1048576", 0, 1e12,
   .in_plugin = true, .help = "bytes one call may make (held to a 32nd of "
   "memory_budget)"},
  {NULL}
};

const plugin_type config_filter_type = {
  .name = "filter", .role = PLUGIN_FILTER, .flags = PLUGIN_SANDBOX,
  .summary = "a Lua plugin between the decoders and the outputs: it "
             "transforms, drops or splits messages, or watches them",
  .keys = filter_keys, .settings_size = sizeof(config_filter),
};
