/*
 * tail_config.c - tail_input's type: its keys, their defaults and bounds
 * (what each does: tail.h), and its multiline rules (join.h).
 */
#include <stddef.h>
#include <stdlib.h>

#include "tail.h"

#define T(field) offsetof(config_tail, field)
#define J(field) (T(join) + offsetof(join_rule, field))

/* multiline = { start = "^%d", max_lines = 1000, ... }: one of start,
 * continue, cri or docker, with the limits of a joined record. */
typedef struct {
  char *start, *cont;
  bool cri, docker;
  uint64_t max_lines, max_bytes, flush_ms;
} multiline_keys;

#define M(field) offsetof(multiline_keys, field)

static const config_key multiline_keys_map[] = {
  {"start", KEY_STRING, M(start),
   .help = "a Lua pattern that starts a record"},
  {"continue", KEY_STRING, M(cont),
   .help = "a Lua pattern of the lines that continue one"},
  {"cri", KEY_BOOL, M(cri), "false",
   .help = "join CRI (containerd, CRI-O) partial lines"},
  {"docker", KEY_BOOL, M(docker), "false",
   .help = "join Docker json-file partial lines"},
  {"max_lines", KEY_COUNT, M(max_lines), "1000", 1, 1e9,
   .help = "lines in one record at most"},
  {"max_bytes", KEY_COUNT, M(max_bytes), "1048576", 1, 1u << 30,
   .help = "bytes in one record at most"},
  {"flush_ms", KEY_COUNT, M(flush_ms), "1000", 0, 3600000,
   .help = "a record held this long without a next line is handed on"},
  {NULL}
};

static int read_multiline(plugin_ctx *c, void *settings)
{
  join_rule *r = &((config_tail *)settings)->join;
  multiline_keys m = {0};
  int rc, modes;
  char why[256];

  *r = (join_rule){JOIN_NONE, NULL, 1000, 1u << 20, 1000};
  rc = cfg_read_table(c, "multiline", "a table such as { start = \"^%d\" }",
                      multiline_keys_map, &m);
  if (rc == 0) return 0;
  modes = (m.start != NULL) + (m.cont != NULL) + m.cri + m.docker;
  r->mode = m.start ? JOIN_START : m.cont ? JOIN_CONTINUE
          : m.cri ? JOIN_CRI : JOIN_DOCKER;
  r->pattern = m.start ? m.start : m.cont;
  r->max_lines = m.max_lines;
  r->max_bytes = m.max_bytes;
  r->flush_ms = m.flush_ms;
  if (m.start && m.cont) free(m.cont);
  if (rc < 0) return -1;
  if (modes != 1)
    return cfg_key_fail(c, "multiline", "needs one of start, continue, cri = "
                        "true or docker = true");
  if (r->pattern && !join_pattern_ok(r->pattern, why, sizeof why))
    return cfg_key_fail(c, m.start ? "start" : "continue", "is not a Lua "
                        "pattern lumberjit can use: %s", why);
  return 0;
}

static void free_multiline(void *settings)
{
  config_tail *t = settings;

  free(t->join.pattern);
  t->join.pattern = NULL;
}

static const config_key tail_keys[] = {
  {"paths", KEY_LIST, T(paths), .required = true,
   .help = "glob patterns of the files to follow"},
  {"exclude", KEY_LIST, T(exclude),
   .help = "glob patterns of paths to leave alone"},
  {"read_from_head", KEY_BOOL, T(read_from_head), "false",
   .help = "files the first scan finds are read from their head, not their "
           "end"},
  {"path_field", KEY_FIELD, T(path_field), "path",
   .help = "the field that names a record's file"},
  {"scan_interval_ms", KEY_COUNT, T(scan_interval_ms), "1000", 10, 3600000,
   .help = "how often the patterns are globbed again"},
  {"read_interval_ms", KEY_COUNT, T(read_interval_ms), "200", 0, 10000,
   .help = "a file written to all the time is read at most this often (a "
           "lone write at once); the least of the pipeline's tail_inputs"},
  {"rotate_wait_ms", KEY_COUNT, T(rotate_wait_ms), "5000", 0, 3600000,
   .help = "a renamed or deleted file is closed once it has not grown for "
           "this long"},
  {"idle_close_ms", KEY_COUNT, T(idle_close_ms), "60000", 0, 86400000,
   .help = "a file that has not grown for this long is closed until it "
           "grows"},
  {"last_line_timeout_ms", KEY_COUNT, T(last_line_timeout_ms), "1000", 0,
   3600000, .help = "a last line without a newline is handed on after "
                    "this long without growth"},
  {"max_open_files", KEY_COUNT, T(max_open_files), "1024", 1, 1u << 20,
   .help = "files open at once; more wait for a free slot"},
  {"read_buffer", KEY_COUNT, T(read_buffer), "131072", 4096, 64u << 20,
   .help = "bytes of one read"},
  {"multiline", KEY_CUSTOM, 0, .read = read_multiline,
   .free = free_multiline, .value = "table",
   .help = "join lines into records: { start = PATTERN }, { continue = "
           "PATTERN }, { cri = true } or { docker = true }, with max_lines, "
           "max_bytes, flush_ms"},
  {NULL}
};

const plugin_type tail_input_type = {
  .name = "tail_input", .role = PLUGIN_INPUT,
  .flags = PLUGIN_LINES | PLUGIN_RESUMES,
  .summary = "follows the files glob patterns match, through rotation and "
             "restarts",
  .keys = tail_keys, .settings_size = sizeof(config_tail),
  .input = &tail_input_kind,
};
