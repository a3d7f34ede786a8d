/*
 * file_output.c - stdout_output and file_output (file_output.h): their
 * types, and their sinks opened on output.c's writer.
 */
#include "file_output.h"

#include <stddef.h>

#include "plugin.h"

typedef struct {
  char *path;
} file_settings;

static int open_writer(output_sink *o, const output_host *h,
                       const config_plugin *p, char *err, size_t errlen)
{
  const file_settings *f = p->settings;

  return output_open(o, h->loop, h->label, f ? f->path : NULL,
                     p->flush_bytes, p->newline, h->events, err, errlen);
}

static const output_kind writer_kind = {.open = open_writer};

static const char *file_path(const config_plugin *p)
{
  return ((const file_settings *)p->settings)->path;
}

static const config_key file_keys[] = {
  {"path", KEY_STRING, offsetof(file_settings, path), .required = true,
   .help = "the file records are appended to"},
  {NULL}
};

const plugin_type stdout_output_type = {
  .name = "stdout_output", .role = PLUGIN_OUTPUT, .flags = PLUGIN_STDOUT,
  .summary = "writes records to standard output",
  .output = &writer_kind,
};

const plugin_type file_output_type = {
  .name = "file_output", .role = PLUGIN_OUTPUT,
  .summary = "appends records to a file",
  .keys = file_keys, .settings_size = sizeof(file_settings),
  .writes_file = file_path, .output = &writer_kind,
};
