/*
 * config.h - the configuration file: one Lua file of named plugin tables.
 *
 *   stdin = { type = "stdin_input", decoder = "syslog" }
 *   app = { type = "tail_input", paths = { "/var/log/app/[a-z]*.log" } }
 *   syslog = { type = "decoder", filename = "decoders/rsyslog.lua", tz = "UTC" }
 *   json = { type = "encoder", filename = "encoders/json.lua" }
 *   out = { type = "stdout_output", encoder = "json", message_matcher = "TRUE" }
 *   lumberjit = { dead_letter_path = "dead-letter.log" }   -- global settings
 *
 * The file must be a regular file (a FIFO is refused, never waited on). It
 * is evaluated once, in a Lua state with only the base, string, table and
 * math libraries (no io, os, require, load of files), stopped for good after
 * 10,000,000 instructions or once it holds more than 64 MiB. Every global
 * table with a `type` is a plugin instance named by the global; `lumberjit`
 * holds the global settings. Validation errors name the file, the line and
 * the key.
 *
 * A directory is a configuration too: its *.lua files (not those whose
 * name starts with a dot), in byte order of their names, are evaluated one
 * after the other in one state, as one configuration (each file with the
 * instruction budget; the memory limit is the whole's). A file sees what
 * the files before it defined, but each global is defined by one file
 * only: a name another file defined already is an error naming both
 * files and lines; so is the `lumberjit` table, which one file holds.
 *
 * The files the plugins name are checked on every load, --check or run:
 * decoder and encoder files are regular files; a file_input's file exists
 * and is no directory (a tail_input's globs may match nothing yet); a file_output's file and the dead-letter file have
 * their directory; and no input reads a file lumberjit writes.
 */
#ifndef LUMBERJIT_CONFIG_H
#define LUMBERJIT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin_type.h"
#include "sandbox.h"

/* What becomes of a line longer than max_line, cut into pieces. */
typedef enum {
  LONG_LINES_DEAD_LETTER, /* every piece goes to the dead-letter path */
  LONG_LINES_SPLIT,       /* each piece is a record */
  LONG_LINES_TRUNCATE     /* the first piece is the record; the rest are
                             counted and dropped */
} long_line_rule;

struct config_plugin {
  char *name;
  const plugin_type *type;
  config_role role;
  const char *file;      /* the file its table is in (one of cfg->sources) */
  int line;              /* where the plugin's table starts, in that file */
  void *settings;        /* its type's own keys (plugin_type.h) */

  /* Set by a reload (service.h) on an input that ran before it, of the
   * same name and type: it goes on, so a tail_input's file without a
   * checkpoint came while the pipelines changed and is read from its
   * head, not skipped to its end as at a first start. */
  bool continues;

  /* inputs (config_input_keys, config_lines_keys) */
  char *decoder;         /* decoder instance name, or NULL */
  size_t max_line;       /* longest record */
  long_line_rule long_lines; /* what becomes of longer lines */
  bool keep_cr;          /* keep a CR that ends a line (before its LF) */

  /* decoders and encoders (config_sandbox_keys) */
  char *filename;        /* resolved path of the Lua file */
  char *lua_settings;    /* Lua source of the table read_config reads */
  char *module_dirs;     /* ';'-separated: lua_modules, then module_path */
  sandbox_limits limits;

  /* outputs (config_output_keys), filters */
  char *encoder;         /* encoder instance name, or NULL: the payload */
  char *message_matcher;
  bool newline;          /* append "\n" after each encoded message */
  size_t flush_bytes;    /* write out once this much is buffered */
};

struct config {
  char *file;               /* the file or directory given */
  char **sources;           /* the files evaluated, NULL-ended */
  config_plugin *plugins;
  size_t nplugins;
  char *dead_letter_path;   /* file for dead-letter records */
  char *dead_letter_output; /* or an output instance that receives them */
  uint64_t dead_letter_max_bytes; /* its file's size cap; 0: none */
  uint64_t dead_letter_keep; /* rotated files kept under the cap */
  uint64_t watchdog_interval_ms;
  uint64_t stop_timeout_ms; /* after a stop signal, for outputs to drain */
  char *state_dir;          /* checkpoints of file inputs; NULL: none */
  uint64_t checkpoint_interval_ms; /* how often they are saved */
  uint64_t memory_budget;   /* bytes the output queues may hold in all */
  size_t workers;           /* threads running decoders and encoders */
  char *metrics_path;       /* the metrics file (metrics.h); NULL: none */
  uint64_t metrics_interval_ms; /* how often it is rewritten */
  uint64_t stats_interval_ms; /* how often the log gets the run's figures
                                 (run_stats.h); 0: only at exit */
  int log_level;            /* a log_level (log.h) */
  char *http_address;       /* the HTTP endpoint's HOST:PORT; NULL: none */
  uint64_t health_paused_ms; /* /health fails past this hold; 0: never */
  char *pid_file;           /* where the running process writes its PID,
                               for `lumberjit --reload`; NULL: none */
  bool watch_config;        /* reload when a config file or plugin changes */
  uint64_t watch_interval_ms; /* how often they are looked at */
};

/* The global settings' keys, as a type's (for --help lumberjit). */
extern const plugin_type config_global_settings;
/* What a filter does with the messages its matcher takes. */
typedef enum {
  FILTER_INLINE, /* each is replaced by what the filter injects for it */
  FILTER_TAP     /* each goes on; what the filter injects is routed too */
} filter_mode;

/* A filter's own settings (config_roles.c). */
typedef struct {
  int mode;                    /* a filter_mode */
  uint64_t ticker_interval_ms; /* timer_event every so often; 0: never */
} config_filter;

/* The sandboxed plugins' types (config_roles.c). */
extern const plugin_type config_decoder_type, config_encoder_type,
    config_filter_type;

/* Loads and validates; on error returns -1 with "FILE:LINE: ..." in err.
 * types: the plugin types a file may name, NULL-ended (registry.h). */
int config_load(const char *path, const plugin_type *const *types,
                config *cfg, char *err, size_t errlen);
/* The same, for --try: a file of decoders and encoders alone will do. */
int config_load_plugins(const char *path, const plugin_type *const *types,
                        config *cfg, char *err, size_t errlen);
/* The type named `name` in types, or NULL. */
const plugin_type *config_type_find(const plugin_type *const *types,
                                    const char *name);
void config_free(config *cfg);
const config_plugin *config_find(const config *cfg, const char *name,
                                 config_role role);
/* NULL-terminated lists of strings (paths, exclude): a copy that lives
 * apart from the config (NULL when out of memory), and freeing one. */
char **config_list_copy(char *const *list);
void config_list_free(char **list);

#endif
