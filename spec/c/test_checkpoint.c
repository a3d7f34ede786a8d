/*
 * test_checkpoint.c - checkpoint tickets: the offset moves over tickets
 * whose records are all done, in order, and never past one whose record
 * was released undone (checkpoint_release), so the next run reads it
 * again; and a state file a power loss damaged keeps its blocks before the
 * damage and makes the files of the rest new (read from their head);
 * and a save that fails (out of descriptors, the rename refused) leaves
 * the state file as it was, no temporary file, and the offsets to save,
 * logged once for a run of failures.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

/* The records up to `end` are done. */
static void acknowledge(checkpoint_source *s, uint64_t end)
{
  checkpoint_ticket *t = checkpoint_ticket_new(s);

  t->end = end;
  checkpoint_unref(t);
}

/* Saves a.log at offset 10 and b.log at 20, rewrites the state file with
 * `damage` applied to its text, and reads it back: what each file resumes
 * at (UINT64_MAX: not known) and whether the store saw damage. */
static bool read_damaged(const char *dir, void (*damage)(char *text,
                                                         size_t *len),
                         uint64_t *a_at, uint64_t *b_at)
{
  char path[2][512], state[600], text[8192], err[256];
  const char *name[2] = {"a.log", "b.log"};
  checkpoint_source *s[2];
  checkpoint_store st;
  struct stat sb[2];
  uint64_t offset, *at[2] = {a_at, b_at};
  int fd[2];
  bool known, damaged;
  size_t len;
  FILE *f;

  snprintf(state, sizeof state, "%s/checkpoints", dir);
  unlink(state);
  CHECK(checkpoint_store_open(&st, dir, err, sizeof err) == 0);
  for (int i = 0; i < 2; i++) {
    snprintf(path[i], sizeof path[i], "%s/%s", dir, name[i]);
    fd[i] = open(path[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
    CHECK(fd[i] >= 0 &&
          write(fd[i], "aaaaaaaaa\nbbbbbbbbb\nccccccccc\n", 30) == 30);
    CHECK(fstat(fd[i], &sb[i]) == 0);
    s[i] = checkpoint_track(&st, "in", path[i], fd[i], &sb[i], &offset, &known);
    acknowledge(s[i], 10 * (uint64_t)(i + 1));
  }
  CHECK(checkpoint_save(&st) == 0);
  checkpoint_store_close(&st);
  f = fopen(state, "r+");
  CHECK(f != NULL);
  len = fread(text, 1, sizeof text - 1, f);
  text[len] = '\0';
  damage(text, &len);
  CHECK(freopen(state, "w", f) != NULL && fwrite(text, 1, len, f) == len);
  fclose(f);
  CHECK(checkpoint_store_open(&st, dir, err, sizeof err) == 0);
  damaged = st.damaged;
  for (int i = 0; i < 2; i++) {
    s[i] = checkpoint_track(&st, "in", path[i], fd[i], &sb[i], &offset, &known);
    *at[i] = known ? offset : UINT64_MAX;
    CHECK(known || s[i]->changed == damaged);
    close(fd[i]);
    unlink(path[i]);
  }
  checkpoint_store_close(&st);
  unlink(state);
  return damaged;
}

static void keep(char *text, size_t *len)
{
  (void)text;
  (void)len;
}

/* a's offset, 10, becomes 20: it still parses, and would skip a line. */
static void change_digit(char *text, size_t *len)
{
  (void)len;
  strstr(text, "offset 10")[7] = '2';
}

/* Cut after the last block's check line: whole blocks, no end line. */
static void cut_end(char *text, size_t *len)
{
  *len = (size_t)(strstr(text, "end ") - text);
}

/* Cut inside the last block, a's, in its offset: 10 becomes 1. */
static void cut_last_block(char *text, size_t *len)
{
  *len = (size_t)(strstr(text, "offset 10") - text) + 8;
}

static void test_damage(const char *dir)
{
  uint64_t a, b;

  CHECK(!read_damaged(dir, keep, &a, &b) && a == 10 && b == 20);
  /* The blocks are the newest source's first: b's, then a's. */
  CHECK(read_damaged(dir, change_digit, &a, &b) && a == UINT64_MAX &&
        b == 20);
  CHECK(read_damaged(dir, cut_end, &a, &b) && a == 10 && b == 20);
  CHECK(read_damaged(dir, cut_last_block, &a, &b) && a == UINT64_MAX &&
        b == 20);
}

static void read_text(const char *path, char *text, size_t cap)
{
  FILE *f = fopen(path, "r");
  size_t len = f ? fread(text, 1, cap - 1, f) : 0;

  if (f) fclose(f);
  text[len] = '\0';
}

static bool exists(const char *path)
{
  struct stat sb;

  return stat(path, &sb) == 0;
}

/* stderr goes to path from now on; returns a copy of the old one. */
static int log_to(const char *path)
{
  int stderr_copy = dup(2), log = open(path, O_CREAT | O_WRONLY | O_TRUNC,
                                       0600);

  CHECK(stderr_copy >= 0 && log >= 0 && dup2(log, 2) == 2);
  close(log);
  return stderr_copy;
}

static void log_back(int stderr_copy)
{
  dup2(stderr_copy, 2);
  close(stderr_copy);
}

/* Whether three saves with no descriptor free (the soft limit at the
 * lowest free number) all failed. */
static bool failed_without_descriptors(checkpoint_store *st)
{
  struct rlimit old, none;
  bool failed = true;

  if (getrlimit(RLIMIT_NOFILE, &old) != 0) return false;
  none = old;
  none.rlim_cur = (rlim_t)dup(0);
  close((int)none.rlim_cur);
  if (setrlimit(RLIMIT_NOFILE, &none) != 0) return false;
  for (int i = 0; i < 3; i++) failed = checkpoint_save(st) == -1 && failed;
  setrlimit(RLIMIT_NOFILE, &old);
  return failed;
}

static void test_failed_save(const char *dir)
{
  char path[512], state[600], tmp[600], log_path[600], before[8192],
      text[8192], err[256];
  checkpoint_store st;
  checkpoint_source *s;
  struct stat sb;
  uint64_t offset;
  bool known, failed, kept, saved;
  int fd, stderr_copy;

  snprintf(path, sizeof path, "%s/in.log", dir);
  snprintf(state, sizeof state, "%s/checkpoints", dir);
  snprintf(tmp, sizeof tmp, "%s/checkpoints.tmp", dir);
  snprintf(log_path, sizeof log_path, "%s/log", dir);
  fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
  CHECK(fd >= 0 && write(fd, "aaaaaaaaa\nbbbbbbbbb\n", 20) == 20);
  CHECK(fstat(fd, &sb) == 0);
  CHECK(checkpoint_store_open(&st, dir, err, sizeof err) == 0);
  s = checkpoint_track(&st, "in", path, fd, &sb, &offset, &known);
  acknowledge(s, 10);
  CHECK(checkpoint_save(&st) == 0);
  read_text(state, before, sizeof before);
  acknowledge(s, 20);

  /* Out of descriptors: the last state file stays, the offset is saved
   * once one is free; logged at the first failure and at the end. (The
   * checks wait for stderr back.) */
  stderr_copy = log_to(log_path);
  failed = failed_without_descriptors(&st);
  read_text(state, text, sizeof text);
  kept = strcmp(text, before) == 0 && st.dirty && !exists(tmp);
  saved = checkpoint_save(&st) == 0;
  log_back(stderr_copy);
  CHECK(failed && kept && saved);
  read_text(log_path, text, sizeof text);
  CHECK(strstr(text, "cannot write it: Too many open files (creating its "
                     "temporary file)") != NULL);
  CHECK(strstr(strstr(text, "cannot write it") + 1, "cannot write it") ==
        NULL);
  CHECK(strstr(text, "written again, after 3 failed tries") != NULL);
  read_text(state, text, sizeof text);
  CHECK(strstr(before, "offset 10\n") && strstr(text, "offset 20\n"));

  /* A rename refused (a directory in the way): its temporary file goes,
   * and the offset stays to save. */
  acknowledge(s, 30);
  snprintf(text, sizeof text, "%s/keep", state);
  CHECK(unlink(state) == 0 && mkdir(state, 0700) == 0 &&
        mkdir(text, 0700) == 0);
  CHECK(checkpoint_save(&st) == -1 && st.dirty && !exists(tmp));
  CHECK(rmdir(text) == 0 && rmdir(state) == 0);
  CHECK(checkpoint_save(&st) == 0 && !st.dirty);
  checkpoint_store_close(&st);
  close(fd);
  unlink(path);
  unlink(log_path);
  unlink(state);
}

int main(void)
{
  char dir[] = "/tmp/lumberjit-test-checkpoint-XXXXXX";

  if (!mkdtemp(dir)) return 1;
  test_release(dir);
  test_no_state_dir(dir);
  test_damage(dir);
  test_failed_save(dir);
  {
    char state[600];
    snprintf(state, sizeof state, "%s/checkpoints", dir);
    unlink(state);
  }
  rmdir(dir);
  return check_summary();
}
