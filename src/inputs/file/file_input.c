/*
 * file_input.c - stdin_input and file_input (file_input.h): their types
 * and their one source.
 */
#include "file_input.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input_host.h"
#include "log.h"

typedef struct {
  char *path;
} file_settings;

/* The input's: the path its source reads, kept while the pipeline runs. */
typedef struct {
  char *path;
} file_state;

/* The file's one source, starting where its checkpoint says. */
static int resume_file(pl_input *pi, pl_source *src, const config_plugin *p,
                       const char *path, char *err, size_t errlen)
{
  checkpoint_store *store = pl_input_checkpoints(pi);
  input *in = pl_source_reader(src);
  checkpoint_source *ckpt;
  struct stat sb;
  uint64_t offset;
  bool known;
  int fd;

  /* Only regular files have offsets to resume at; stat never blocks on a
   * FIFO, as open could. */
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return 0;
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 || fstat(fd, &sb) != 0) {
    snprintf(err, errlen, "%s:%d: input '%s': cannot open %s: %s",
             p->file, p->line, p->name, path,
             strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  in->fd = fd;
  ckpt = checkpoint_track(store, p->name, path, fd, &sb, &offset, &known);
  if (!ckpt) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (offset > 0)
    log_msg("input '%s': resuming %s at offset %" PRIu64 " (%s)", p->name,
            path, offset, store->state_file);
  pl_source_set_file(src, ckpt);
  in->read_offset = in->done_offset = offset;
  /* A stop inside a line leaves it to the resumed run (input.h). */
  in->hold_partial = store->state_file != NULL;
  return 0;
}

/* Reads of an eighth of memory_budget, from 64 KiB to 1 MiB: two of them
 * at the worker (MAX_JOBS_IN_FLIGHT) fit in its quarter for the workers. */
static size_t reader_buffer_size(uint64_t memory_budget)
{
  uint64_t size = memory_budget / 8;

  return (size_t)(size < (64u << 10) ? (64u << 10)
                  : size > (1u << 20) ? (1u << 20) : size);
}

static int build_reader(pl_input *pi, const config_plugin *p, char *err,
                        size_t errlen)
{
  const file_settings *f = p->settings;
  pl_source *src = pl_source_new(pi);
  file_state *st = calloc(1, sizeof *st);
  input *in;

  pl_input_set_state(pi, st);
  if (!src || !st || (f && !(st->path = strdup(f->path)))) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  in = pl_source_reader(src);
  in->readbuf_size = reader_buffer_size(pl_input_config(pi)->memory_budget);
  if (!f) return 0; /* standard input */
  in->path = st->path;
  return resume_file(pi, src, p, f->path, err, errlen);
}

static int start_reader(pl_input *pi, char *err, size_t errlen)
{
  return input_start(pl_source_reader(pl_input_sources(pi)),
                     pl_input_loop(pi), err, errlen);
}

static void stop_reader(pl_input *pi)
{
  pl_source *src = pl_input_sources(pi);

  if (src) input_stop(pl_source_reader(src));
}

static void reader_finished(pl_input *pi, pl_source *src)
{
  (void)src;
  pl_input_done(pi);
}

static void free_reader(pl_input *pi)
{
  file_state *st = pl_input_state(pi);

  if (st) free(st->path);
  free(st);
  pl_input_set_state(pi, NULL);
}

static const input_kind reader_kind = {
  .build = build_reader, .start = start_reader, .stop = stop_reader,
  .source_finished = reader_finished, .free = free_reader,
};

static const char *file_path(const config_plugin *p)
{
  return ((const file_settings *)p->settings)->path;
}

static const config_key file_keys[] = {
  {"path", KEY_STRING, offsetof(file_settings, path), .required = true,
   .help = "the file (or FIFO, or device) to read"},
  {NULL}
};

const plugin_type stdin_input_type = {
  .name = "stdin_input", .role = PLUGIN_INPUT,
  .flags = PLUGIN_LINES | PLUGIN_STDIN,
  .summary = "reads standard input to its end",
  .input = &reader_kind,
};

const plugin_type file_input_type = {
  .name = "file_input", .role = PLUGIN_INPUT,
  .flags = PLUGIN_LINES | PLUGIN_RESUMES,
  .summary = "reads one file to its end, resuming at its checkpoint",
  .keys = file_keys, .settings_size = sizeof(file_settings),
  .reads_file = file_path, .input = &reader_kind,
};
