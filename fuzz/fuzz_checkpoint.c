/*
 * fuzz_checkpoint.c - the checkpoint file's reader
 * (src/pipeline/checkpoint.c) on random and damaged files: it keeps what
 * it can read and ignores the rest, never crashes.
 *
 * Input: [0] flags, then the file's bytes. With flag 1 the file starts
 * with a valid header and a block for a file that exists (its device and
 * inode, a fingerprint length, hash and offset from the next 17 bytes), so
 * the fuzzer reaches the matching of saved files, their windows and the
 * blocks after. The store is opened on it, tracks that file (as a tail
 * input would), saves (the file is written anew) and closes; the file it
 * wrote must then read back with the same offset for the file.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], state[96], logfile[96];

/* The directory goes at exit (libFuzzer's end of a timed run too). */
static void remove_dir(void)
{
  char tmp[128];
  unlink(state);
  snprintf(tmp, sizeof tmp, "%s.tmp", state);
  unlink(tmp);
  unlink(logfile);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "%s/lj-fuzz-cp-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir)) abort();
    atexit(remove_dir);
    snprintf(state, sizeof state, "%s/checkpoints", dir);
    snprintf(logfile, sizeof logfile, "%s/app.log", dir);
    FILE *f = fopen(logfile, "w");
    if (!f) abort();
    for (int i = 0; i < 200; i++) fprintf(f, "line %d of the log\n", i);
    fclose(f);
  }
  if (size < 1) return 0;
  int fd = open(logfile, O_RDONLY);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) abort();

  FILE *out = fopen(state, "w");
  if (!out) abort();
  const uint8_t *p = data + 1;
  size_t left = size - 1;
  if (data[0] & 1 && left >= 17) {
    uint64_t hash, off;
    memcpy(&hash, p + 1, 8);
    memcpy(&off, p + 9, 8);
    fprintf(out, "lumberjit checkpoint 2\ninput in\nfile %s\ndevice %llu\n"
            "inode %llu\nfingerprint %u %" PRIx64 "\noffset %" PRIu64 "\n",
            logfile, (unsigned long long)sb.st_dev,
            (unsigned long long)sb.st_ino, p[0] % 80, hash, off % 8000);
    p += 17;
    left -= 17;
  }
  if (left && fwrite(p, 1, left, out) != left) abort();
  fclose(out);

  checkpoint_store st;
  char err[256];
  uint64_t offset = 0, again = 0;
  bool known = false;
  if (checkpoint_store_open(&st, dir, err, sizeof err) != 0) abort();
  checkpoint_source *s =
    checkpoint_track(&st, "in", logfile, fd, &sb, &offset, &known);
  if (!s) abort();
  checkpoint_save(&st);
  checkpoint_store_close(&st);

  /* What it wrote reads back. */
  if (checkpoint_store_open(&st, dir, err, sizeof err) != 0) abort();
  s = checkpoint_track(&st, "in", logfile, fd, &sb, &again, &known);
  if (!s) abort();
  if (again != offset) {
    fprintf(stderr, "offset %llu saved, %llu read back\n",
            (unsigned long long)offset, (unsigned long long)again);
    abort();
  }
  checkpoint_store_close(&st);
  close(fd);
  return 0;
}
