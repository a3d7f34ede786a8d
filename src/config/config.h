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
 * The files the plugins name are checked on every load, --check or run:
 * decoder and encoder files are regular files; a file_input's file exists
 * and is no directory (a tail_input's globs may match nothing yet); a file_output's file and the dead-letter file have
 * their directory; and no input reads a file lumberjit writes.
 */
#ifndef LUMBERJIT_CONFIG_H
#define LUMBERJIT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <sys/socket.h>

#include "frame.h"
#include "join.h"
#include "sandbox.h"

typedef enum {
  PLUGIN_INPUT,
  PLUGIN_DECODER,
  PLUGIN_ENCODER,
  PLUGIN_OUTPUT
} config_role;

typedef enum {
  INPUT_STDIN,
  INPUT_FILE,
  INPUT_TAIL,
  INPUT_SYSLOG,
  INPUT_GENERATOR,
  OUTPUT_STDOUT,
  OUTPUT_FILE,
  OUTPUT_KAFKA,
  OUTPUT_SYSLOG,
  PLUGIN_SANDBOX
} config_plugin_type;

/* What becomes of a line longer than max_line, cut into pieces. */
typedef enum {
  LONG_LINES_DEAD_LETTER, /* every piece goes to the dead-letter path */
  LONG_LINES_SPLIT,       /* each piece is a record */
  LONG_LINES_TRUNCATE     /* the first piece is the record; the rest are
                             counted and dropped */
} long_line_rule;

/* A tail_input's settings (tail.h says what each does). */
typedef struct {
  char **paths;          /* glob patterns, NULL-terminated */
  char **exclude;        /* patterns of paths to leave alone; NULL-ended */
  char *path_field;      /* field naming the file; NULL: none */
  bool read_from_head;
  uint64_t scan_interval_ms, rotate_wait_ms, idle_close_ms;
  uint64_t last_line_timeout_ms, max_open_files, read_buffer;
  join_rule join;        /* multiline */
} config_tail;

/* A syslog_input's settings (syslog_input.h says what each does). */
typedef enum {
  SYSLOG_TCP, SYSLOG_TLS, SYSLOG_UDP, SYSLOG_UNIX_DGRAM, SYSLOG_UNIX_STREAM
} syslog_transport;

typedef struct {
  char *address;         /* as written: "tcp://127.0.0.1:514" */
  syslog_transport transport;
  struct sockaddr_storage sockaddr; /* tcp, tls, udp */
  char *path;            /* unix sockets */
  framing framing;
  uint64_t max_connections, max_connections_per_address;
  uint64_t tls_handshake_timeout_ms, first_message_timeout_ms;
  uint64_t idle_timeout_ms, receive_buffer;
  unsigned socket_mode;
  char *sender_field, *listener_field; /* NULL: none */
  char *tls_cert, *tls_key, *tls_ca;
  bool tls_verify_client;
} config_syslog;

/* What a record librdkafka holds takes besides its payload and key
 * (counted twice: output_kafka.c, cost): librdkafka's message
 * (rd_kafka_msg_t, about 170 bytes in 2.0), the allocator's header and
 * rounding, the output's slot for it (88), with room to spare.
 * memory_bytes counts it for each record. */
#define KAFKA_RECORD_OVERHEAD 320

/* A kafka_output's settings (output_kafka.h says what each does). */
typedef struct {
  char *topic, *key;     /* templates (record_template.h); key NULL: none */
  char **properties;     /* librdkafka's, checked: name, value, ..., NULL */
  uint64_t memory_bytes; /* what librdkafka's records may take, each
                          counted as its bytes twice + KAFKA_RECORD_OVERHEAD */
  char *buffer_path;     /* the disk buffer's directory; NULL: none */
  uint64_t buffer_max_bytes, buffer_segment_bytes;
  uint64_t bytes_per_second, messages_per_second; /* caps; 0: none */
} config_kafka;

/* A generator_input's settings (generator_input.h says what each does). */
typedef struct {
  int format;            /* a line_format */
  uint64_t count;        /* lines in all; 0: until stopped */
  uint64_t rate;         /* lines per second; 0: as fast as they are taken */
  uint64_t seed;
} config_generator;

typedef struct {
  char *name;
  config_role role;
  config_plugin_type type;
  int line;              /* where the plugin's table starts */

  /* inputs */
  char *path;            /* file_input: the file; file_output: the file */
  char *decoder;         /* decoder instance name, or NULL */
  size_t max_line;       /* longest record */
  long_line_rule long_lines; /* what becomes of longer lines */
  bool keep_cr;          /* keep a CR that ends a line (before its LF) */
  config_tail tail;      /* tail_input */
  config_syslog syslog;  /* syslog_input */
  config_generator generator; /* generator_input */

  /* decoders and encoders */
  char *filename;        /* resolved path of the Lua file */
  char *settings;        /* Lua source of the table read_config reads */
  char *module_dirs;     /* ';'-separated: lua_modules, then module_path */
  sandbox_limits limits;

  /* outputs */
  char *encoder;         /* encoder instance name, or NULL: the payload */
  char *message_matcher;
  bool newline;          /* append "\n" after each encoded message */
  size_t flush_bytes;    /* write out once this much is buffered */
  config_kafka kafka;    /* kafka_output */
  struct syslog_output_config *syslog_output; /* syslog_output.h */
} config_plugin;

typedef struct {
  char *file;
  config_plugin *plugins;
  size_t nplugins;
  char *dead_letter_path;   /* file for dead-letter records */
  char *dead_letter_output; /* or an output instance that receives them */
  uint64_t dead_letter_max_bytes; /* its file's size cap; 0: none */
  unsigned dead_letter_keep; /* rotated files kept under the cap */
  unsigned watchdog_interval_ms;
  unsigned stop_timeout_ms; /* after a stop signal, for outputs to drain */
  char *state_dir;          /* checkpoints of file inputs; NULL: none */
  unsigned checkpoint_interval_ms; /* how often they are saved */
  uint64_t memory_budget;   /* bytes the output queues may hold in all */
  size_t workers;           /* threads running decoders and encoders */
  char *metrics_path;       /* the metrics file (metrics.h); NULL: none */
  unsigned metrics_interval_ms; /* how often it is rewritten */
  unsigned stats_interval_ms; /* how often the log gets the run's figures
                                 (run_stats.h); 0: only at exit */
} config;

/* Loads and validates; on error returns -1 with "FILE:LINE: ..." in err. */
int config_load(const char *path, config *cfg, char *err, size_t errlen);
/* The same, for --try: a file of decoders and encoders alone will do. */
int config_load_plugins(const char *path, config *cfg, char *err,
                        size_t errlen);
void config_free(config *cfg);
const config_plugin *config_find(const config *cfg, const char *name,
                                 config_role role);
/* NULL-terminated lists of strings (paths, exclude): a copy that lives
 * apart from the config (NULL when out of memory), and freeing one. */
char **config_list_copy(char *const *list);
void config_list_free(char **list);

#endif
