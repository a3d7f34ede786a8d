/*
 * config.c - loads and validates the configuration file (see config.h).
 *
 * The file runs in a plain Lua state with the JIT off, only the base,
 * string, table and math libraries, an instruction budget and a memory
 * limit (see "evaluation" below). The globals it creates are then read with
 * the C API: the global settings here, each plugin table by its type's
 * reader (config_plugins.c); then the cross references are checked here,
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
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <luajit.h>

#include "config_internal.h"
#include "pattern.h"
#include "syslog_output.h"

#define CONFIG_INSTRUCTION_BUDGET 10000000
#define CONFIG_MEMORY_LIMIT (64u << 20)
#define CONFIG_MEMORY_SLACK (1u << 20) /* to raise the memory-limit error */
#define CONFIG_MAX_SIZE (1u << 20)

static const char *const global_keys[] = {
  "dead_letter_path", "dead_letter_max_bytes", "dead_letter_keep",
  "dead_letter_output", "watchdog_interval_ms", "stop_timeout_ms",
  "state_dir", "checkpoint_interval_ms", "memory_budget", "workers",
  "metrics_path", "metrics_interval_ms", "stats_interval_ms", NULL
};

static int read_globals(loader *ld, config *cfg, int line)
{
  config_plugin g = {.name = "lumberjit", .line = line};
  plugin_ctx c = {ld, &g, NULL};
  uint64_t v = cfg->watchdog_interval_ms, stop = cfg->stop_timeout_ms;
  uint64_t ckpt = cfg->checkpoint_interval_ms, workers = cfg->workers;
  uint64_t metrics_ms = cfg->metrics_interval_ms, stats_ms = 0;
  uint64_t keep = cfg->dead_letter_keep;
  char *dl_path = NULL;

  ld->globals_line = line;
  if (cfg_check_keys(&c, global_keys, false) != 0 ||
      cfg_read_string(&c, "dead_letter_path", false, &dl_path) != 0 ||
      cfg_read_string(&c, "dead_letter_output", false, &cfg->dead_letter_output) != 0 ||
      cfg_read_count(&c, "watchdog_interval_ms", 1000, &v) != 0 ||
      cfg_read_count(&c, "stop_timeout_ms", 3600000, &stop) != 0 ||
      cfg_read_string(&c, "state_dir", false, &cfg->state_dir) != 0 ||
      cfg_read_count(&c, "checkpoint_interval_ms", 3600000, &ckpt) != 0 ||
      cfg_read_count(&c, "memory_budget", 1e12, &cfg->memory_budget) != 0 ||
      cfg_read_count(&c, "workers", 256, &workers) != 0 ||
      cfg_read_string(&c, "metrics_path", false, &cfg->metrics_path) != 0 ||
      cfg_read_count(&c, "metrics_interval_ms", 3600000, &metrics_ms) != 0 ||
      cfg_read_count(&c, "stats_interval_ms", 3600000, &stats_ms) != 0 ||
      cfg_read_count(&c, "dead_letter_max_bytes", 1e15,
                     &cfg->dead_letter_max_bytes) != 0 ||
      cfg_read_count(&c, "dead_letter_keep", 1000, &keep) != 0)
    return -1;
  cfg->dead_letter_keep = (unsigned)keep;
  if (stats_ms && stats_ms < 100)
    return cfg_key_fail(&c, "stats_interval_ms", "must be 0 (none) or at least 100");
  cfg->stats_interval_ms = (unsigned)stats_ms;
  if (metrics_ms < 100)
    return cfg_key_fail(&c, "metrics_interval_ms", "must be at least 100");
  cfg->metrics_interval_ms = (unsigned)metrics_ms;
  if (workers < 1) return cfg_key_fail(&c, "workers", "must be at least 1");
  cfg->workers = (size_t)workers;
  if (cfg->memory_budget < (1u << 20))
    return cfg_key_fail(&c, "memory_budget", "must be at least 1 MiB (1048576)");
  if (ckpt < 1) return cfg_key_fail(&c, "checkpoint_interval_ms", "must be at least 1");
  cfg->stop_timeout_ms = (unsigned)stop;
  cfg->checkpoint_interval_ms = (unsigned)ckpt;
  if (v < 1) return cfg_key_fail(&c, "watchdog_interval_ms", "must be at least 1");
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
  return cfg_fail(ld, cfg_key_line(ld->text, key, p->line),
              "%s '%s': key '%s' names '%s', which is not a %s in this file",
              config_role_names[p->role], p->name, key, name, config_role_names[role]);
}

static int check_references(loader *ld, const config *cfg)
{
  bool has_input = false, has_output = false;
  const config_plugin *dl, *stdin_reader = NULL;

  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    /* Two readers of one stream would each take a part of its lines. */
    if (p->type == INPUT_STDIN && stdin_reader)
      return cfg_fail(ld, p->line, "input '%s': standard input is read by "
                      "input '%s' already: one stdin_input at most", p->name,
                      stdin_reader->name);
    if (p->type == INPUT_STDIN) stdin_reader = p;
    if (check_ref(ld, cfg, p, "decoder", p->decoder, PLUGIN_DECODER) != 0 ||
        check_ref(ld, cfg, p, "encoder", p->encoder, PLUGIN_ENCODER) != 0)
      return -1;
    if (p->type == OUTPUT_KAFKA && p->kafka.buffer_max_bytes &&
        !p->kafka.buffer_path && !cfg->state_dir)
      return cfg_fail(ld, cfg_key_line(ld->text, "disk_buffer", p->line),
                      "output '%s': key 'disk_buffer' needs a path, or "
                      "lumberjit.state_dir to keep it in", p->name);
    if (p->type == OUTPUT_SYSLOG && p->syslog_output->buffer_max_bytes &&
        !p->syslog_output->buffer_path && !cfg->state_dir)
      return cfg_fail(ld, cfg_key_line(ld->text, "disk_buffer", p->line),
                      "output '%s': key 'disk_buffer' needs a path, or "
                      "lumberjit.state_dir to keep it in", p->name);
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
      return cfg_fail(ld, cfg_key_line(ld->text, "dead_letter_output", 1),
                  "global settings 'lumberjit': key 'dead_letter_output' "
                  "names '%s', which is not an output in this file",
                  cfg->dead_letter_output);
    if (dl->type == OUTPUT_KAFKA || dl->type == OUTPUT_SYSLOG)
      return cfg_fail(ld, cfg_key_line(ld->text, "dead_letter_output", 1),
                  "global settings 'lumberjit': key 'dead_letter_output' "
                  "names %s '%s': dead letters go to a file or "
                  "standard output", dl->type == OUTPUT_KAFKA ?
                  "kafka_output" : "syslog_output", cfg->dead_letter_output);
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
    line = cfg_key_line(ld->text, name, 1);
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
    if (lua_type(L, -1) == LUA_TSTRING) ti = config_find_type(lua_tostring(L, -1));
    if (!ti) {
      int kline = cfg_key_line(ld->text, "type", line);
      char names[256];
      config_type_names(names, sizeof names);
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
    return cfg_fail(ld, 0, "cannot prepare the configuration environment");
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
  return config_check_files(ld, cfg);
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
             "regular file", ld->file, cfg_file_kind(st.st_mode));
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

static int load(const char *path, config *cfg, bool plugins_only, char *err,
                size_t errlen)
{
  loader ld = {.file = path, .err = err, .errlen = errlen,
               .plugins_only = plugins_only};
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
  cfg->dead_letter_max_bytes = 64u << 20;
  cfg->dead_letter_keep = 3;
  cfg->metrics_interval_ms = 10000;
  {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->workers = cores > 0 ? (size_t)cores : 1;
  }
  ld.dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
  ld.text = malloc(CONFIG_MAX_SIZE + 1);
  if (!cfg->file || !cfg->dead_letter_path || !ld.dir || !ld.text) {
    rc = cfg_fail(&ld, 0, "out of memory");
  } else if (read_source(&ld, &len) != 0) {
    rc = -1;
  } else if (len > CONFIG_MAX_SIZE) {
    rc = cfg_fail(&ld, 0, "larger than %u bytes", CONFIG_MAX_SIZE);
  } else {
    ld.text[len] = '\0';
    ld.L = lua_newstate(config_alloc, &ld);
    rc = ld.L ? evaluate(&ld, cfg, len)
              : cfg_fail(&ld, 0, "cannot create a Lua state (out of memory?)");
    if (ld.L) lua_close(ld.L);
  }
  free(ld.text);
  free(ld.dir);
  if (rc != 0) config_free(cfg);
  return rc;
}

int config_load(const char *path, config *cfg, char *err, size_t errlen)
{
  return load(path, cfg, false, err, errlen);
}

int config_load_plugins(const char *path, config *cfg, char *err,
                        size_t errlen)
{
  return load(path, cfg, true, err, errlen);
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
    config_list_free(p->tail.paths);
    config_list_free(p->tail.exclude);
    free(p->tail.path_field);
    free(p->tail.join.pattern);
    free(p->syslog.address);
    free(p->syslog.path);
    free(p->syslog.sender_field);
    free(p->syslog.listener_field);
    free(p->syslog.tls_cert);
    free(p->syslog.tls_key);
    free(p->syslog.tls_ca);
    free(p->kafka.topic);
    free(p->kafka.key);
    config_list_free(p->kafka.properties);
    free(p->kafka.buffer_path);
    syslog_output_config_free(p->syslog_output);
  }
  free(cfg->plugins);
  free(cfg->file);
  free(cfg->dead_letter_path);
  free(cfg->dead_letter_output);
  free(cfg->state_dir);
  free(cfg->metrics_path);
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
