/*
 * config_internal.h - what the parts of the configuration loader share:
 * config.c evaluates the file and reads the global settings, config_keys.c
 * reads a table's keys (and makes the errors that name file, line and
 * key), config_keymap.c reads a plugin's table by its type's key maps,
 * config_roles.c has the keys of each role and the sandboxed plugins' types,
 * and config_files.c checks the files the plugins name.
 */
#ifndef LUMBERJIT_CONFIG_INTERNAL_H
#define LUMBERJIT_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <lua.h>

#include "config.h"
#include "plugin_type.h"

/* Why the evaluation was stopped; once set, it never runs another
 * instruction (config.c's evaluate). */
typedef enum { RUNNING, STOPPED_BUDGET, STOPPED_MEMORY } loader_stop;

/* One file of the configuration: a directory's *.lua files are evaluated
 * in name order as one configuration (config.c: "a directory"). */
typedef struct {
  char *path;         /* as errors name it: the file given, or DIR/NAME */
  size_t offset, len; /* its text in the loader's */
  int first_line;     /* its line 1 is this line of the loader's text */
} config_source;

/* Lines are the loader's: the files' texts one after the other, so that a
 * line names the file too; cfg_fail says FILE:LINE of that file, and the
 * plugins get theirs (config_plugin.file, .line) once loaded. */
typedef struct {
  const char *file;   /* the file being read or evaluated */
  char *dir;          /* the config's directory, for relative plugin files */
  char *text;         /* the sources, for line numbers */
  size_t text_len;
  config_source *sources;
  size_t nsources;
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
  const plugin_type *const *types; /* the types it may name */
} loader;

/* The table on top of the Lua stack, being read (plugin_type.h). */
struct plugin_ctx {
  loader *ld;
  const config_plugin *p;
  const char *type_name;  /* NULL for the global settings */
};

/* ---- config_keys.c ---- */

/* "DIR/NAME", and the directory a path is in; NULL when out of memory. */
char *cfg_join_path(const char *dir, const char *name);
char *cfg_parent_dir(const char *path);

/* The line, at or after `from` and in its source, that starts with `key =`
 * (also `["key"] =`); `from` when there is none. */
int cfg_key_line(const loader *ld, const char *key, int from);
/* Sets the error "FILE:LINE: ..." and returns -1. */
int cfg_fail(loader *ld, int line, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* The source a line of the loader's text is in (line > 0). */
const config_source *cfg_source_at(const loader *ld, int line);
/* "FILE:LINE: output 'out' (stdout_output): WHAT" at the table's line, -1. */
int cfg_table_fail(plugin_ctx *c, const char *what);
/* "a directory", "a FIFO", ...: what a file that is not regular is. */
const char *cfg_file_kind(mode_t mode);

/* ---- config_keymap.c ---- */

/* Reads the plugin table on top of the stack as a t, by its key maps. */
int config_read_plugin(loader *ld, config_plugin *p, const plugin_type *t);
/* Frees what config_read_plugin allocated. */
void config_free_plugin(config_plugin *p);

/* ---- config_files.c ---- */

/* Inputs' files exist, outputs' directories do, no input reads what
 * lumberjit writes, state_dir is a directory. */
int config_check_files(loader *ld, const config *cfg);

#endif
