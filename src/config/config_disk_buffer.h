/*
 * config_disk_buffer.h - the `disk_buffer` key outputs that keep records
 * on disk while their destination is away share (kafka_output,
 * syslog_output):
 *
 *   disk_buffer = { path = "/var/lib/lumberjit/kafka", max_bytes = (1 GiB),
 *                   segment_bytes = (16 MiB), when_full = ("hold") }
 *
 * when_full is what a full disk buffer does: "hold" the inputs until it
 * drains, or "drop_oldest": delete its oldest segment, counting and
 * logging the records dropped (disk_queue.h: dq_drop_oldest), so that the
 * newest are kept. drop_oldest needs max_bytes at least twice
 * segment_bytes: the segment being written is never dropped.
 *
 * path defaults to a directory in lumberjit.state_dir named after the
 * output (config_disk_buffer_dir), which must then be set.
 */
#ifndef LUMBERJIT_CONFIG_DISK_BUFFER_H
#define LUMBERJIT_CONFIG_DISK_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "plugin_type.h"

typedef struct {
  char *path;            /* NULL: in state_dir */
  uint64_t max_bytes;    /* 0: no disk buffer */
  uint64_t segment_bytes;
  int when_full;         /* DISK_BUFFER_HOLD, DISK_BUFFER_DROP_OLDEST */
} config_disk_buffer;

enum { DISK_BUFFER_HOLD, DISK_BUFFER_DROP_OLDEST };

/* Reads the key (absent: max_bytes 0) into b; -1 after cfg_key_fail. */
int config_read_disk_buffer(plugin_ctx *c, config_disk_buffer *b);
void config_free_disk_buffer(config_disk_buffer *b);
/* Once the file is read: a disk buffer without a path needs state_dir. */
int config_check_disk_buffer(plugin_ctx *c, const config *cfg,
                             const config_disk_buffer *b);
/* Its directory: path, or STATE_DIR/PREFIX-NAME written into out; NULL
 * when there is no disk buffer. */
const char *config_disk_buffer_dir(const config_disk_buffer *b,
                                   const char *state_dir, const char *prefix,
                                   const char *name, char *out, size_t len);

#endif
