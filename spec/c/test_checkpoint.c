/*
 * test_checkpoint.c - checkpoint tickets: the offset moves over tickets
 * whose records are all done, in order, and never past one whose record
 * was released undone (checkpoint_release), so the next run reads it
 * again.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "checkpoint.h"

static void test_release(const char *dir)
{
  char path[512], err[256];
  checkpoint_store st;
  checkpoint_source *s;
  checkpoint_ticket *t[3];
  struct stat sb;
  uint64_t offset;
  bool known;
  int fd;

  snprintf(path, sizeof path, "%s/in.log", dir);
  fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
  CHECK(fd >= 0 && write(fd, "aaaaaaaaa\nbbbbbbbbb\nccccccccc\n", 30) == 30);
  CHECK(fstat(fd, &sb) == 0);
  CHECK(checkpoint_store_open(&st, dir, err, sizeof err) == 0);
  s = checkpoint_track(&st, "in", path, fd, &sb, &offset, &known);
  CHECK(s != NULL && offset == 0);
  for (int i = 0; i < 3; i++) {
    t[i] = checkpoint_ticket_new(s);
    t[i]->end = 10 * (uint64_t)(i + 1);
  }
  CHECK(checkpoint_rereadable(t[0]));
  CHECK(!checkpoint_rereadable(NULL));
  checkpoint_unref(t[0]);
  CHECK(s->acked == 10);
  /* The second record was released undone: the third, done, must not
   * take the offset past it. */
  checkpoint_release(t[1]);
  checkpoint_unref(t[2]);
  CHECK(s->acked == 10);
  checkpoint_store_close(&st);
  close(fd);
  unlink(path);
}

/* Without a state_dir nothing is saved: nothing can be read again. */
static void test_no_state_dir(const char *dir)
{
  char path[512], err[256];
  checkpoint_store st;
  checkpoint_source *s;
  checkpoint_ticket *t;
  struct stat sb;
  uint64_t offset;
  bool known;
  int fd;

  snprintf(path, sizeof path, "%s/stream.log", dir);
  fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
  CHECK(fd >= 0 && fstat(fd, &sb) == 0);
  CHECK(checkpoint_store_open(&st, NULL, err, sizeof err) == 0);
  s = checkpoint_track(&st, "in", path, fd, &sb, &offset, &known);
  CHECK(s != NULL);
  t = checkpoint_ticket_new(s);
  CHECK(!checkpoint_rereadable(t));
  checkpoint_unref(t);
  checkpoint_store_close(&st);
  close(fd);
  unlink(path);
}

int main(void)
{
  char dir[] = "/tmp/lumberjit-test-checkpoint-XXXXXX";

  if (!mkdtemp(dir)) return 1;
  test_release(dir);
  test_no_state_dir(dir);
  {
    char state[600];
    snprintf(state, sizeof state, "%s/checkpoints", dir);
    unlink(state);
  }
  rmdir(dir);
  return check_summary();
}
