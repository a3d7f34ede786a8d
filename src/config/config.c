/*
 * config.c - loads and validates the configuration file (see config.h).
 *
 * The file runs in a plain Lua state with the JIT off, only the base,
 * string, table and math libraries, an instruction budget and a memory
 * limit (see "evaluation" below). The globals it creates are then read with
 * the C API: the global settings here, each plugin table by its type's
 * key maps (config_keymap.c); then the cross references are checked here,
 * and the files the plugins name by config_files.c. Line numbers are found
 * in the source text (config_keys.c); the file:line of Lua syntax and
 * runtime errors comes from Lua itself.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <luajit.h>

#include "config_internal.h"
#include "host_port.h"
#include "log.h"
#include "pattern.h"

#define CONFIG_INSTRUCTION_BUDGET 10000000
#define CONFIG_MEMORY_LIMIT (64u << 20)
#define CONFIG_MEMORY_SLACK (1u << 20) /* to raise the memory-limit error */
#define CONFIG_MAX_SIZE (1u << 20)

#define G(field) offsetof(config, field)

static int read_workers(plugin_ctx *c, void *settings)
{
  config *cfg = settings;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t n = cores > 0 ? (uint64_t)cores : 1;

  /* 0: the plugins run on the loop thread (worker.h: on_loop). */
  if (cfg_read_count(c, "workers", 256, &n) != 0) return -1;
  cfg->workers = (size_t)n;
  return 0;
}

static const config_key global_keys[] = {
  {"dead_letter_path", KEY_STRING, G(dead_letter_path), "dead-letter.log",
   .help = "the file records that could not be delivered go to, each with "
           "its reason"},
  {"dead_letter_max_bytes", KEY_COUNT, G(dead_letter_max_bytes), "67108864",
   0, 1e15, .help = "its size cap: rotated past it (0: none)"},
  {"dead_letter_keep", KEY_COUNT, G(dead_letter_keep), "3", 0, 1000,
   .help = "rotated dead-letter files kept under the cap"},
  {"dead_letter_output", KEY_STRING, G(dead_letter_output),
   .help = "an output that takes the dead letters instead of the file"},
  {"watchdog_interval_ms", KEY_COUNT, G(watchdog_interval_ms), "10", 1, 1000,
   .help = "how often the sandboxes' CPU and instruction limits are checked"},
  {"stop_timeout_ms", KEY_COUNT, G(stop_timeout_ms), "5000", 0, 3600000,
   .help = "after a stop signal, how long outputs may take to drain"},
  {"state_dir", KEY_STRING, G(state_dir),
   .help = "where checkpoints and disk buffers live (made 0700)"},
  {"checkpoint_interval_ms", KEY_COUNT, G(checkpoint_interval_ms), "1000", 1,
   3600000, .help = "how often checkpoints are saved"},
  {"memory_budget", KEY_COUNT, G(memory_budget), "33554432", 1u << 20, 1e12,
   .help = "bytes the records in memory may take in all"},
  {"workers", KEY_CUSTOM, 0, .read = read_workers, .value = "number, 0 to 256",
   .help = "threads running decoders, filters and encoders (default: the cores; 0: none, they run on the loop thread)"},
  {"metrics_path", KEY_STRING, G(metrics_path),
   .help = "a file rewritten with the metrics in Prometheus's text format"},
  {"metrics_interval_ms", KEY_COUNT, G(metrics_interval_ms), "10000", 100,
   3600000, .help = "how often the metrics file is rewritten"},
  {"stats_interval_ms", KEY_COUNT, G(stats_interval_ms), "0", 0, 3600000,
   .help = "how often the log gets the run's figures (0: only at exit; else "
           "at least 100)"},
  {"log_level", KEY_CHOICE, G(log_level), "info", .choices = log_level_names,
   .help = "the least severe lines the log shows"},
  {"http_address", KEY_STRING, G(http_address),
   .help = "HOST:PORT the HTTP endpoint (/metrics, /health, /api/v1/stats) "
           "listens on (none: no endpoint)"},
  {"health_paused_ms", KEY_COUNT, G(health_paused_ms), "30000", 0, 3600000,
   .help = "/health fails once the inputs are held this long (0: never)"},
  {"pid_file", KEY_STRING, G(pid_file),
   .help = "a file the running process writes its PID to, which `lumberjit "
           "--reload` signals"},
  {"watch_config", KEY_BOOL, G(watch_config), "false",
   .help = "reload when a configuration file or a plugin's file changes"},
  {"watch_interval_ms", KEY_COUNT, G(watch_interval_ms), "2000", 100, 3600000,
   .help = "with watch_config: how often the files are looked at"},
  {NULL}
};

const plugin_type config_global_settings = {
  .name = "lumberjit", .summary = "the global settings, in a table named "
  "lumberjit", .keys = global_keys,
};

/* The global settings: from the `lumberjit` table on top of the stack, or
 * an empty one for the defaults. */
static int read_globals(loader *ld, config *cfg, int line)
{
  config_plugin g = {.name = "lumberjit", .line = line};
  plugin_ctx c = {ld, &g, NULL};
  struct sockaddr_storage sa;
  const char *why;

  ld->globals_line = line;
  if (cfg_read_keys(&c, global_keys, cfg) != 0) return -1;
  if (cfg->stats_interval_ms && cfg->stats_interval_ms < 100)
    return cfg_key_fail(&c, "stats_interval_ms", "must be 0 (none) or at least 100");
  if (cfg->http_address &&
      (why = host_port_parse(cfg->http_address, &sa)) != NULL)
    return cfg_key_fail(&c, "http_address", "'%s': %s", cfg->http_address, why);
  return 0;
}

/* ---- cross references ---- */

static int check_ref(loader *ld, const config *cfg, const config_plugin *p,
                     const char *key, const char *name, config_role role)
{
  if (!name || config_find(cfg, name, role)) return 0;
  return cfg_fail(ld, cfg_key_line(ld, key, p->line),
              "%s '%s': key '%s' names '%s', which is no %s in the "
              "configuration",
              config_role_names[p->role], p->name, key, name, config_role_names[role]);
}

static int check_references(loader *ld, const config *cfg)
{
  bool has_input = false, has_output = false;
  const config_plugin *dl, *stdin_reader = NULL;

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    plugin_ctx c = {ld, p, p->type->name};
    /* Two readers of one stream would each take a part of its lines. */
    if ((p->type->flags & PLUGIN_STDIN) && stdin_reader)
      return cfg_fail(ld, p->line, "input '%s': standard input is read by "
                      "input '%s' already: one stdin_input at most", p->name,
                      stdin_reader->name);
    if (p->type->flags & PLUGIN_STDIN) stdin_reader = p;
    if (check_ref(ld, cfg, p, "decoder", p->decoder, PLUGIN_DECODER) != 0 ||
        check_ref(ld, cfg, p, "encoder", p->encoder, PLUGIN_ENCODER) != 0)
      return -1;
    if (p->type->check && p->type->check(&c, cfg, p) != 0) return -1;
    has_input |= p->role == PLUGIN_INPUT;
    has_output |= p->role == PLUGIN_OUTPUT;
  }
  if (!ld->plugins_only && (!has_input || !has_output))
    return cfg_fail(ld, 1, "the file defines no %s (a plugin table such as "
                "x = { type = \"%s\", ... })", has_input ? "output" : "input",
                has_input ? "stdout_output" : "stdin_input");
  if (cfg->dead_letter_output) {
    dl = config_find(cfg, cfg->dead_letter_output, PLUGIN_OUTPUT);
    if (!dl)
      return cfg_fail(ld, cfg_key_line(ld, "dead_letter_output",
                                       ld->globals_line),
                  "global settings 'lumberjit': key 'dead_letter_output' "
                  "names '%s', which is not an output in the configuration",
                  cfg->dead_letter_output);
    if (dl->type->flags & PLUGIN_NO_DEAD_LETTERS)
      return cfg_fail(ld, cfg_key_line(ld, "dead_letter_output",
                                       ld->globals_line),
                  "global settings 'lumberjit': key 'dead_letter_output' "
                  "names %s '%s': dead letters go to a file or "
                  "standard output", dl->type->name, cfg->dead_letter_output);
  }
  return 0;
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

/* The first line of the source that owns the global whose name is at idx
 * (1 when none does). */
static int owner_first_line(loader *ld, int owners, int idx)
{
  lua_State *L = ld->L;
  int line = 1;

  lua_pushvalue(L, idx);
  lua_rawget(L, owners);
  if (lua_type(L, -1) == LUA_TNUMBER)
    line = ld->sources[(size_t)lua_tointeger(L, -1)].first_line;
  lua_pop(L, 1);
  return line;
}

/* Reads every global the files set that the base environment lacks;
 * owners maps each to the source that defined it (claim_globals). */
static int read_file_globals(loader *ld, config *cfg, int base_table,
                             int owners)
{
  lua_State *L = ld->L;
  size_t cap = 0;

  lua_pushnil(L);
  while (lua_next(L, LUA_GLOBALSINDEX)) {
    const char *name;
    int line;
    const plugin_type *ti = NULL;
    config_plugin *p;

    lua_pushvalue(L, -2);
    lua_rawget(L, base_table);
    if (!lua_isnil(L, -1) || lua_type(L, -3) != LUA_TSTRING) {
      lua_pop(L, 2);
      continue;
    }
    lua_pop(L, 1);
    name = lua_tostring(L, -2);
    line = cfg_key_line(ld, name, owner_first_line(ld, owners, -2));
    if (lua_type(L, -1) != LUA_TTABLE)
      return cfg_fail(ld, line, "global '%s' is a %s; a plugin is a table with a "
                  "type (use local for helper values)", name,
                  luaL_typename(L, -1));
    if (strcmp(name, "lumberjit") == 0) {
      if (read_globals(ld, cfg, line) != 0) return -1;
      lua_pop(L, 1);
      continue;
    }
    cfg_get_key(L, "type");
    if (lua_type(L, -1) == LUA_TSTRING)
      ti = config_type_find(ld->types, lua_tostring(L, -1));
    if (!ti) {
      int kline = cfg_key_line(ld, "type", line);
      char names[512] = "";
      for (const plugin_type *const *t = ld->types; *t; t++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                 t == ld->types ? "" : ", ", (*t)->name);
      return cfg_fail(ld, lua_isnil(L, -1) ? line : kline,
                      "plugin '%s': key 'type' %s (one of %s)", name,
                      lua_isnil(L, -1) ? "is required" : "is unknown", names);
    }
    lua_pop(L, 1);
    if (cfg->nplugins == cap) {
      config_plugin *np;
      cap = cap ? cap * 2 : 8;
      np = realloc(cfg->plugins, cap * sizeof *np);
      if (!np) return cfg_fail(ld, line, "out of memory");
      cfg->plugins = np;
    }
    p = &cfg->plugins[cfg->nplugins++];
    memset(p, 0, sizeof *p);
    p->name = strdup(name);
    p->line = line;
    if (!p->name || config_read_plugin(ld, p, ti) != 0) return -1;
    lua_pop(L, 1);
  }
  /* A file without plugin tables leaves plugins NULL, and qsort's base
   * must not be NULL even for 0 elements (fuzz_config_keys found it). */
  if (cfg->nplugins > 1)
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

/* ---- a file or a directory ----
 *
 * The sources run one after the other in one state. After each, every
 * global that is new, or holds another value than before it ran, is
 * claimed by that source: in owners (name -> source index) and values
 * (name -> the value it claimed). A name another source claimed already
 * is an error naming both: a file would otherwise replace another's plugin
 * unseen.
 */

static int claim_globals(loader *ld, size_t src, int base_table, int owners,
                         int values)
{
  lua_State *L = ld->L;

  lua_pushnil(L);
  while (lua_next(L, LUA_GLOBALSINDEX)) {
    bool skip;
    lua_pushvalue(L, -2);
    lua_rawget(L, base_table);
    skip = !lua_isnil(L, -1) || lua_type(L, -3) != LUA_TSTRING;
    lua_pop(L, 1);
    if (!skip) {
      lua_pushvalue(L, -2);
      lua_rawget(L, values);
      skip = lua_rawequal(L, -1, -2);
      lua_pop(L, 1);
    }
    if (!skip) {
      const char *name = lua_tostring(L, -2);
      int line = cfg_key_line(ld, name, ld->sources[src].first_line);
      lua_pushvalue(L, -2);
      lua_rawget(L, owners);
      if (!lua_isnil(L, -1)) {
        const config_source *was = &ld->sources[(size_t)lua_tointeger(L, -1)];
        int wline = cfg_key_line(ld, name, was->first_line);
        return cfg_fail(ld, line, "'%s' is defined in %s:%d already: each "
                        "global is defined by one file of the directory",
                        name, was->path, wline - was->first_line + 1);
      }
      lua_pop(L, 1);
      lua_pushvalue(L, -2);
      lua_pushinteger(L, (lua_Integer)src);
      lua_rawset(L, owners);
      lua_pushvalue(L, -2);
      lua_pushvalue(L, -2);
      lua_rawset(L, values);
    }
    lua_pop(L, 1);
  }
  return 0;
}

/* Runs one source under the budget and the memory limit. */
static int run_source(loader *ld, const config_source *src)
{
  lua_State *L = ld->L;

  ld->file = src->path;
  lua_pushfstring(L, "@%s", src->path);
  if (luaL_loadbufferx(L, ld->text + src->offset, src->len,
                       lua_tostring(L, -1), "t") != 0)
    return eval_fail(ld);
  lua_sethook(L, budget_hook, LUA_MASKCOUNT, CONFIG_INSTRUCTION_BUDGET);
  ld->mem_enforce = true;
  /* A tail call can end the file over the memory limit with no instruction
   * left to stop it. */
  if (lua_pcall(L, 0, 0, 0) != 0 || ld->stop != RUNNING) return eval_fail(ld);
  ld->mem_enforce = false;
  lua_sethook(L, NULL, 0, 0);
  lua_pop(L, 1);
  return 0;
}

static int evaluate(loader *ld, config *cfg)
{
  lua_State *L = ld->L;
  int base_table, owners, values;

  luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
  if (lua_cpcall(L, open_config_env, NULL) != 0)
    return cfg_fail(ld, 0, "cannot prepare the configuration environment");
  lua_register(L, "xpcall", config_xpcall);
  /* Remember what the environment holds, to tell the files' globals. */
  lua_newtable(L);
  base_table = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, LUA_GLOBALSINDEX)) {
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, base_table);
    lua_pop(L, 1);
  }
  lua_newtable(L);
  owners = lua_gettop(L);
  lua_newtable(L);
  values = lua_gettop(L);
  for (size_t i = 0; i < ld->nsources; i++)
    if (run_source(ld, &ld->sources[i]) != 0 ||
        claim_globals(ld, i, base_table, owners, values) != 0)
      return -1;
  if (read_file_globals(ld, cfg, base_table, owners) != 0) return -1;
  if (!ld->globals_line) { /* no lumberjit table: the defaults */
    lua_newtable(L);
    if (read_globals(ld, cfg, 0) != 0) return -1;
    lua_pop(L, 1);
  }
  if (check_references(ld, cfg) != 0) return -1;
  return config_check_files(ld, cfg);
}

/* Reads the file `path` onto the end of ld->text, as a source. It is
 * opened without blocking and must be a regular file: a FIFO would wait
 * for a writer. */
static int read_source(loader *ld, const char *path)
{
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  config_source *src;
  struct stat st;
  size_t len = 0;
  ssize_t n = -1;
  char *text;

  ld->file = path;
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(ld->err, ld->errlen, "%s: cannot open the configuration file: "
             "%s", path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    snprintf(ld->err, ld->errlen, "%s: the configuration file is %s, not a "
             "regular file", path, cfg_file_kind(st.st_mode));
  } else if (!(text = realloc(ld->text, ld->text_len + CONFIG_MAX_SIZE + 2))) {
    snprintf(ld->err, ld->errlen, "%s: out of memory", path);
  } else {
    ld->text = text;
    text += ld->text_len;
    do {
      n = read(fd, text + len, CONFIG_MAX_SIZE + 1 - len);
      if (n > 0) len += (size_t)n;
    } while ((n > 0 && len <= CONFIG_MAX_SIZE) || (n < 0 && errno == EINTR));
    if (n < 0)
      snprintf(ld->err, ld->errlen, "%s: cannot read the configuration file: "
               "%s", path, strerror(errno));
  }
  if (fd >= 0) close(fd);
  if (n < 0) return -1;
  if (len > CONFIG_MAX_SIZE)
    return cfg_fail(ld, 0, "larger than %u bytes", CONFIG_MAX_SIZE);
  src = &ld->sources[ld->nsources];
  *src = (config_source){.path = strdup(path), .offset = ld->text_len,
                         .len = len, .first_line = 1};
  if (!src->path) return cfg_fail(ld, 0, "out of memory");
  ld->file = src->path;
  if (ld->nsources > 0) {
    const config_source *prev = src - 1;
    src->first_line = prev->first_line;
    for (size_t i = prev->offset; i < src->offset; i++)
      src->first_line += ld->text[i] == '\n';
  }
  ld->nsources++;
  /* Each source starts on a line of its own in the text. */
  if (len > 0 && text[len - 1] != '\n') text[len++] = '\n';
  ld->text_len += len;
  ld->text[ld->text_len] = '\0';
  return 0;
}

/* The *.lua files of a directory, not hidden, in byte order. */
static int lua_file(const struct dirent *d)
{
  size_t n = strlen(d->d_name);

  return d->d_name[0] != '.' && n > 4 && strcmp(d->d_name + n - 4, ".lua") == 0;
}

static int byte_order(const struct dirent **a, const struct dirent **b)
{
  return strcmp((*a)->d_name, (*b)->d_name);
}

/* Reads the sources: `path` itself, or each *.lua file of the directory
 * `path`. */
static int read_sources(loader *ld, const char *path)
{
  struct dirent **names;
  struct stat st;
  int n, rc = 0;

  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    ld->dir = cfg_parent_dir(path);
    ld->sources = calloc(1, sizeof *ld->sources);
    if (!ld->dir || !ld->sources) return cfg_fail(ld, 0, "out of memory");
    return read_source(ld, path);
  }
  ld->dir = strdup(path);
  if (!ld->dir) return cfg_fail(ld, 0, "out of memory");
  n = scandir(path, &names, lua_file, byte_order);
  if (n < 0) {
    snprintf(ld->err, ld->errlen, "%s: cannot read the configuration "
             "directory: %s", path, strerror(errno));
    return -1;
  }
  if (n == 0) {
    snprintf(ld->err, ld->errlen, "%s: the configuration directory has no "
             "*.lua file", path);
    rc = -1;
  } else if (!(ld->sources = calloc((size_t)n, sizeof *ld->sources)))
    rc = cfg_fail(ld, 0, "out of memory");
  for (int i = 0; i < n; i++) {
    char *file = rc == 0 ? cfg_join_path(path, names[i]->d_name) : NULL;
    if (rc == 0 && !file) rc = cfg_fail(ld, 0, "out of memory");
    if (rc == 0) rc = read_source(ld, file);
    free(file);
    free(names[i]);
  }
  free(names);
  ld->file = path; /* not the file just freed */
  return rc;
}

/* Hands the sources' paths to cfg, and gives each plugin its file and its
 * line in that file. */
static int place_plugins(loader *ld, config *cfg)
{
  cfg->sources = calloc(ld->nsources + 1, sizeof *cfg->sources);
  if (!cfg->sources) return cfg_fail(ld, 0, "out of memory");
  for (size_t i = 0; i < ld->nsources; i++) {
    cfg->sources[i] = ld->sources[i].path;
    ld->sources[i].path = NULL;
  }
  for (size_t i = 0; i < cfg->nplugins; i++) {
    config_plugin *p = &cfg->plugins[i];
    const config_source *src = cfg_source_at(ld, p->line);
    p->file = cfg->sources[src - ld->sources];
    p->line = p->line - src->first_line + 1;
  }
  return 0;
}

static int load(const char *path, const plugin_type *const *types,
                config *cfg, bool plugins_only, char *err, size_t errlen)
{
  loader ld = {.file = path, .err = err, .errlen = errlen,
               .plugins_only = plugins_only, .types = types};
  int rc;

  memset(cfg, 0, sizeof *cfg);
  cfg->file = strdup(path);
  if (!cfg->file) {
    rc = cfg_fail(&ld, 0, "out of memory");
  } else if ((rc = read_sources(&ld, path)) == 0) {
    ld.L = lua_newstate(config_alloc, &ld);
    rc = ld.L ? evaluate(&ld, cfg)
              : cfg_fail(&ld, 0, "cannot create a Lua state (out of memory?)");
    if (ld.L) lua_close(ld.L);
    if (rc == 0) rc = place_plugins(&ld, cfg);
  }
  for (size_t i = 0; i < ld.nsources; i++) free(ld.sources[i].path);
  free(ld.sources);
  free(ld.text);
  free(ld.dir);
  if (rc != 0) config_free(cfg);
  return rc;
}

int config_load(const char *path, const plugin_type *const *types,
                config *cfg, char *err, size_t errlen)
{
  return load(path, types, cfg, false, err, errlen);
}

int config_load_plugins(const char *path, const plugin_type *const *types,
                        config *cfg, char *err, size_t errlen)
{
  return load(path, types, cfg, true, err, errlen);
}

const plugin_type *config_type_find(const plugin_type *const *types,
                                    const char *name)
{
  for (; *types; types++)
    if (strcmp((*types)->name, name) == 0) return *types;
  return NULL;
}

void config_free(config *cfg)
{
  for (size_t i = 0; i < cfg->nplugins; i++) {
    config_free_plugin(&cfg->plugins[i]);
    free(cfg->plugins[i].name);
  }
  free(cfg->plugins);
  free(cfg->file);
  config_list_free(cfg->sources);
  cfg_free_keys(global_keys, cfg);
  memset(cfg, 0, sizeof *cfg);
}

void config_list_free(char **list)
{
  for (char **p = list; p && *p; p++) free(*p);
  free(list);
}

char **config_list_copy(char *const *list)
{
  size_t n = 0;
  char **copy;

  while (list && list[n]) n++;
  copy = calloc(n + 1, sizeof *copy);
  for (size_t i = 0; copy && i < n; i++)
    if (!(copy[i] = strdup(list[i]))) {
      config_list_free(copy);
      return NULL;
    }
  return copy;
}

const config_plugin *config_find(const config *cfg, const char *name,
                                 config_role role)
{
  for (size_t i = 0; i < cfg->nplugins; i++)
    if (cfg->plugins[i].role == role && strcmp(cfg->plugins[i].name, name) == 0)
      return &cfg->plugins[i];
  return NULL;
}
