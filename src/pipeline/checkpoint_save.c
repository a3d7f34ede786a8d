/*
 * checkpoint_save.c - saving the checkpoints without the loop waiting on a
 * disk, and never past what a power loss would take back.
 *
 * A record written to a file output counts once write(2) took it, which
 * leaves it in the page cache; a checkpoint that covers it, fsynced to
 * disk, would outlive it through a power loss, and the next run would not
 * read it again. So each save syncs the output files (and the dead-letter
 * file) that took bytes since the last save, and only then writes the state
 * file. Both run on libuv's thread pool, on a snapshot of the state taken
 * on the loop, and on duplicates of the files' descriptors, which a reopen
 * or a rotation cannot close under them. One save runs at a time; the
 * timer's next tick takes what changed meanwhile. The last save, at the
 * end of a run, is made on the loop thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "checkpoint_save.h"

typedef struct {
  output_sink *sink;
  int fd;                 /* a dup of its file's */
  uint64_t mark;          /* its bytes written when the dup was made */
} synced_file;

typedef struct checkpoint_job {
  uv_work_t req;
  pipeline *pl;
  char *state;            /* the state file's bytes */
  size_t len;
  const char *failed;     /* the step that failed, NULL: none */
  int err;
  size_t nfiles, nsynced; /* the files, and those fdatasync took */
  synced_file files[];
} checkpoint_job;

static void add_file(checkpoint_job *j, output_sink *o)
{
  uint64_t mark;
  int fd = output_unsynced_fd(o, &mark);

  if (fd >= 0) j->files[j->nfiles++] = (synced_file){o, fd, mark};
}

/* What the state file would hold now, and the files it counts on; NULL
 * when there is nothing to save (or no memory: logged, the store stays
 * dirty). */
static checkpoint_job *job_new(pipeline *pl)
{
  size_t len, n = pl->noutputs + (pl->dl.owns_sink ? 1 : 0);
  char *state = checkpoint_snapshot(&pl->store, &len);
  checkpoint_job *j;

  if (!state) return NULL;
  if (!(j = calloc(1, sizeof *j + n * sizeof j->files[0]))) {
    free(state);
    checkpoint_saved(&pl->store, "taking what it holds", ENOMEM);
    return NULL;
  }
  j->pl = pl;
  j->state = state;
  j->len = len;
  j->req.data = j;
  for (size_t i = 0; i < pl->noutputs; i++) add_file(j, &pl->outputs[i].sink);
  if (pl->dl.owns_sink) add_file(j, &pl->dl.own);
  return j;
}

/* On the thread pool (or the loop, for the last save). */
static void sync_and_write(uv_work_t *req)
{
  checkpoint_job *j = req->data;

  for (; j->nsynced < j->nfiles; j->nsynced++)
    if (fdatasync(j->files[j->nsynced].fd) != 0) {
      j->err = errno;
      j->failed = "syncing the output files it counts on first";
      return;
    }
  j->failed = checkpoint_write_snapshot(&j->pl->store, j->state, j->len,
                                        &j->err);
}

static void done(uv_work_t *req, int status)
{
  checkpoint_job *j = req->data;
  pipeline *pl = j->pl;

  (void)status; /* never cancelled */
  for (size_t i = 0; i < j->nfiles; i++) {
    if (i < j->nsynced) output_synced(j->files[i].sink, j->files[i].mark);
    close(j->files[i].fd);
  }
  checkpoint_saved(&pl->store, j->failed, j->err);
  if (pl->saving == j) pl->saving = NULL;
  free(j->state);
  free(j);
}

void checkpoint_save_start(pipeline *pl)
{
  checkpoint_job *j;

  if (pl->saving || !(j = job_new(pl))) return;
  pl->saving = j;
  if (uv_queue_work(pl->loop, &j->req, sync_and_write, done) != 0) {
    sync_and_write(&j->req);
    done(&j->req, 0);
  }
}

void checkpoint_save_now(pipeline *pl)
{
  checkpoint_job *j;

  while (pl->saving) uv_run(pl->loop, UV_RUN_ONCE);
  if (!(j = job_new(pl))) return;
  sync_and_write(&j->req);
  done(&j->req, 0);
}
