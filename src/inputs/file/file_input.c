/*
 * file_input.c - stdin_input and file_input (file_input.h): their types
 * and their one source.
 */
#include "file_input.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "pipeline_internal.h"

typedef struct {
  char *path;
} file_settings;

/* The file's one source, starting where its checkpoint says. */
static int resume_file(pl_input *pi, pl_source *src, const config_plugin *p,
                       const char *path, char *err, size_t errlen)
{
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
             pi->pl->cfg->file, p->line, p->name, path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  src->in.fd = fd;
  src->ckpt = checkpoint_track(&pi->pl->store, pi->name, path, fd, &sb,
                               &offset, &known);
  if (!src->ckpt) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (offset > 0)
    log_msg("input '%s': resuming %s at offset %" PRIu64 " (%s)", p->name,
            path, offset, pi->pl->store.state_file);
  src->in.read_offset = src->in.done_offset = offset;
  /* A stop inside a line leaves it to the resumed run (input.h). */
  src->in.hold_partial = pi->pl->store.state_file != NULL;
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
  pl_source *src = pipeline_source_new(pi);

  if (!src) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  src->in.readbuf_size = reader_buffer_size(pi->pl->cfg->memory_budget);
  if (!f) return 0; /* standard input */
  src->in.path = pipeline_keep(pi->pl, f->path);
  if (!src->in.path) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return resume_file(pi, src, p, f->path, err, errlen);
}

static int start_reader(pl_input *pi, char *err, size_t errlen)
{
  return input_start(&pi->sources->in, pi->pl->loop, err, errlen);
}

static void stop_reader(pl_input *pi)
{
  if (pi->sources) input_stop(&pi->sources->in);
}

static void reader_finished(pl_input *pi, pl_source *src)
{
  (void)src;
  pipeline_input_done(pi);
}

static const input_kind reader_kind = {
  .build = build_reader, .start = start_reader, .stop = stop_reader,
  .source_finished = reader_finished,
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
  .name = "file_input", .role = PLUGIN_INPUT, .flags = PLUGIN_LINES,
  .summary = "reads one file to its end, resuming at its checkpoint",
  .keys = file_keys, .settings_size = sizeof(file_settings),
  .reads_file = file_path, .input = &reader_kind,
};
