/*
 * config_internal.h - what the parts of the configuration loader share:
 * config.c evaluates the file and reads the global settings, config_keys.c
 * reads a table's keys (and makes the errors that name file, line and
 * key), config_plugins.c knows the plugin types, and config_files.c checks
 * the files the plugins name.
 */
#ifndef LUMBERJIT_CONFIG_INTERNAL_H
#define LUMBERJIT_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <lua.h>

#include "config.h"

/* Why the evaluation was stopped; once set, it never runs another
 * instruction (config.c's evaluate). */
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
  bool plugins_only;  /* a file without inputs or outputs is complete */
} loader;

/* The table on top of the Lua stack, being read. */
typedef struct {
  loader *ld;
  const config_plugin *p;
  const char *type_name;  /* NULL for the global settings */
} plugin_ctx;

extern const char *const config_role_names[]; /* by config_role */

/* ---- config_keys.c ---- */

/* The 1-based line, at or after `from`, that starts with `key =` (also
 * `["key"] =`); `from` when there is none. */
int cfg_key_line(const char *text, const char *key, int from);
/* Sets the error "FILE:LINE: ..." and returns -1. */
int cfg_fail(loader *ld, int line, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* "FILE:LINE: output 'out' (stdout_output): key 'k' ...", -1. */
int cfg_key_fail(plugin_ctx *c, const char *key, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* Pushes t[key] without metamethods; returns its Lua type. */
int cfg_get_key(lua_State *L, const char *key);
/* Each read leaves *out unchanged when the key is absent; -1 on error. */
int cfg_read_string(plugin_ctx *c, const char *key, bool required, char **out);
/* A whole number in [0, max]. */
int cfg_read_count(plugin_ctx *c, const char *key, double max, uint64_t *out);
int cfg_read_bool(plugin_ctx *c, const char *key, bool *out);
/* A string, or a list of strings: a NULL-terminated array. */
int cfg_read_list(plugin_ctx *c, const char *key, bool required, char ***out);
/* "a directory", "a FIFO", ...: what a file that is not regular is. */
const char *cfg_file_kind(mode_t mode);
/* Every key must be known (one within two edits is taken for a typo);
 * open_ended: unknown keys are the plugin's own. */
int cfg_check_keys(plugin_ctx *c, const char *const *known, bool open_ended);

/* ---- config_plugins.c ---- */

/* A plugin type: a new input or output type is a row of config_plugins.c
 * with its reader, and its part of the pipeline. */
typedef struct {
  const char *name;          /* the value of `type` */
  config_role role;
  config_plugin_type type;
  const char *const *keys;   /* the keys it knows, NULL-terminated */
  int (*read)(plugin_ctx *c, config_plugin *p);
} plugin_type_info;

/* The type named `name`, or NULL. */
const plugin_type_info *config_find_type(const char *name);
/* "stdin_input, file_input, ...": for the error naming an unknown type. */
void config_type_names(char *out, size_t len);
/* Reads the plugin table on top of the stack as a ti. */
int config_read_plugin(loader *ld, config_plugin *p,
                       const plugin_type_info *ti);

/* The keys every input knows: max_line, long_lines, decoder. */
int config_read_input(plugin_ctx *c, config_plugin *p);

/* ---- config_syslog.c ---- */

extern const char *const config_syslog_keys[];
int config_read_syslog(plugin_ctx *c, config_plugin *p);

/* The keys every output knows: encoder, message_matcher, newline,
 * flush_bytes. */
int config_read_output(plugin_ctx *c, config_plugin *p);

/* ---- config_kafka.c ---- */

extern const char *const config_kafka_keys[];
int config_read_kafka(plugin_ctx *c, config_plugin *p);

/* ---- config_files.c ---- */

/* Inputs' files exist, outputs' directories do, no input reads what
 * lumberjit writes, state_dir is a directory. */
int config_check_files(loader *ld, const config *cfg);

#endif
