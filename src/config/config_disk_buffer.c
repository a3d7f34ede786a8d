/* config_disk_buffer.c - see config_disk_buffer.h. */
#include "config_disk_buffer.h"

#include <stdio.h>

#include "config.h"

#define B(field) offsetof(config_disk_buffer, field)

/* By DISK_BUFFER_*. */
static const char *const when_full_names[] = {"hold", "drop_oldest", NULL};

static const config_key keys[] = {
  {"path", KEY_STRING, B(path),
   .help = "its directory (default: in state_dir, named after the output)"},
  {"max_bytes", KEY_COUNT, B(max_bytes), "1073741824", 0, 1e15,
   .help = "what it may hold"},
  {"segment_bytes", KEY_COUNT, B(segment_bytes), "16777216", 4096, 1u << 30,
   .help = "the size of one of its files"},
  {"when_full", KEY_CHOICE, B(when_full), "hold", .choices = when_full_names,
   .help = "hold the inputs, or drop the oldest records (counted, logged)"},
  {NULL}
};

int config_read_disk_buffer(plugin_ctx *c, config_disk_buffer *b)
{
  int rc = cfg_read_table(c, "disk_buffer", "a table {path=, max_bytes=, "
                          "segment_bytes=, when_full=}", keys, b);

  if (rc > 0 && b->max_bytes < b->segment_bytes)
    return cfg_key_fail(c, "disk_buffer", "max_bytes must be at least "
                        "segment_bytes (%llu)",
                        (unsigned long long)b->segment_bytes);
  if (rc > 0 && b->when_full == DISK_BUFFER_DROP_OLDEST &&
      b->max_bytes / 2 < b->segment_bytes)
    return cfg_key_fail(c, "disk_buffer", "when_full = \"drop_oldest\" "
                        "needs max_bytes at least twice segment_bytes (%llu): "
                        "the segment being written is never dropped",
                        (unsigned long long)b->segment_bytes);
  return rc < 0 ? -1 : 0;
}

void config_free_disk_buffer(config_disk_buffer *b)
{
  cfg_free_keys(keys, b);
}

int config_check_disk_buffer(plugin_ctx *c, const config *cfg,
                             const config_disk_buffer *b)
{
  if (b->max_bytes && !b->path && !cfg->state_dir)
    return cfg_key_fail(c, "disk_buffer", "needs a path, or "
                        "lumberjit.state_dir to keep it in");
  return 0;
}

const char *config_disk_buffer_dir(const config_disk_buffer *b,
                                   const char *state_dir, const char *prefix,
                                   const char *name, char *out, size_t len)
{
  if (!b->max_bytes) return NULL;
  if (b->path) return b->path;
  snprintf(out, len, "%s/%s-%s", state_dir, prefix, name);
  return out;
}
