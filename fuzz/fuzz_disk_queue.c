/*
 * fuzz_disk_queue.c - the disk queue's reader (src/storage/disk_queue.c)
 * on damaged files: it repairs or refuses, never crashes.
 *
 * Input: [0] segment size, [1] how many records, then each record (a
 * length byte, its bytes), then damage, 4 bytes each op to the end:
 *   [op] [which segment] [where, 2 bytes]
 *   op % 5: flip a byte, cut the file there, write a byte there, the
 *           cursor file's bytes (the rest of the input), a segment of
 *           garbage (likewise).
 * The queue is written for real (dq_append, dq_sync, dq_save_cursor after
 * acknowledging some), damaged, and opened again: dq_open may refuse with
 * a message; if it opens, every record it reads must be one that was
 * appended (CRC-checked), or bytes of the garbage segment written (whose
 * records are the input's to forge: a CRC is no signature), and after
 * acknowledging all of them a third open must find nothing unread. The directory is on /dev/shm when there is
 * one (fdatasync is free there), made once a process.
 */
#define _GNU_SOURCE /* memmem */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_queue.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void empty_dir(void)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[128];
  if (!d) abort();
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
}

/* The n-th segment file (by name: they sort by number), or NULL. */
static const char *segment(unsigned n, char *path, size_t len)
{
  struct dirent **names;
  int count = scandir(dir, &names, NULL, alphasort), found = 0;
  const char *r = NULL;
  for (int i = 0; i < count; i++) {
    size_t l = strlen(names[i]->d_name);
    if (!r && l > 4 && strcmp(names[i]->d_name + l - 4, ".seg") == 0 &&
        (unsigned)found++ == n) {
      snprintf(path, len, "%s/%s", dir, names[i]->d_name);
      r = path;
    }
    free(names[i]);
  }
  free(names);
  return r;
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) abort();
  if (n && write(fd, p, n) != (ssize_t)n) abort();
  close(fd);
}

/* The directory goes at exit (libFuzzer's end of a timed run too). */
static void remove_dir(void)
{
  empty_dir();
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "%s/lj-fuzz-dq-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir)) abort();
    atexit(remove_dir);
  }
  if (size < 2) return 0;
  empty_dir();
  uint64_t seg_bytes = 64 + (uint64_t)data[0] * 4;
  unsigned nrecs = data[1] % 32;
  const uint8_t *p = data + 2, *end = data + size;
  const uint8_t *rec[32];
  size_t rec_len[32];
  char err[512], path[128];
  disk_queue *q;
  buf into = {0};
  uint64_t id;
  const uint8_t *garbage = NULL; /* a segment written whole, as it is */
  size_t garbage_len = 0;

  /* Written for real, some of it acknowledged. */
  if (dq_open(&q, dir, 1 << 20, seg_bytes, err, sizeof err) != 0) abort();
  for (unsigned i = 0; i < nrecs; i++) {
    size_t n = p < end ? *p++ : 0;
    if (n > (size_t)(end - p)) n = (size_t)(end - p);
    rec[i] = p;
    rec_len[i] = n;
    p += n;
    dq_result r = dq_append(q, rec[i], n, err, sizeof err);
    if (r != DQ_OK && r != DQ_TOO_BIG) abort();
  }
  if (dq_sync(q, err, sizeof err) != DQ_OK) abort();
  for (unsigned i = 0; i < nrecs / 3; i++)
    if (dq_read(q, &into, &id, err, sizeof err) == 1) dq_ack(q, id);
  dq_save_cursor(q, err, sizeof err);
  if (dq_close(q) != 0) abort();

  /* Damage. */
  while (end - p >= 4) {
    uint8_t op = p[0], which = p[1];
    size_t at = (size_t)p[2] << 8 | p[3];
    p += 4;
    const char *seg = segment(which % 4, path, sizeof path);
    if (op % 5 == 3) {
      snprintf(path, sizeof path, "%s/cursor", dir);
      write_file(path, p, (size_t)(end - p));
      break;
    }
    if (op % 5 == 4) {
      snprintf(path, sizeof path, "%s/%020u.seg", dir, which);
      write_file(path, p, (size_t)(end - p));
      garbage = p;
      garbage_len = (size_t)(end - p);
      break;
    }
    if (!seg) continue;
    int fd = open(seg, O_RDWR);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) abort();
    if (sb.st_size > 0) {
      at %= (size_t)sb.st_size + (op % 5 == 1);
      unsigned char c;
      if (op % 5 == 1) {
        if (ftruncate(fd, (off_t)at) != 0) abort();
      } else if (pread(fd, &c, 1, (off_t)at) == 1) {
        c = op % 5 == 0 ? (unsigned char)(c ^ (1u << (op >> 5))) : op;
        if (pwrite(fd, &c, 1, (off_t)at) != 1) abort();
      }
    }
    close(fd);
  }

  /* Opened again: repaired, or refused with a reason. */
  if (dq_open(&q, dir, 1 << 20, seg_bytes, err, sizeof err) == 0) {
    int r;
    while ((r = dq_read(q, &into, &id, err, sizeof err)) == 1) {
      bool known = false;
      for (unsigned i = 0; i < nrecs && !known; i++)
        known = into.len == rec_len[i] &&
                (!into.len || memcmp(into.data, rec[i], into.len) == 0);
      known = known || (garbage && (!into.len || memmem(garbage, garbage_len,
                                                        into.data, into.len)));
      if (!known) {
        fprintf(stderr, "read a record never appended (%zu bytes)\n",
                into.len);
        abort();
      }
      dq_ack(q, id);
    }
    dq_save_cursor(q, err, sizeof err);
    dq_close(q);
    if (r < 0) return 0; /* a read error, with its message */
    /* All acknowledged: nothing comes again. */
    if (dq_open(&q, dir, 1 << 20, seg_bytes, err, sizeof err) == 0) {
      if (dq_read(q, &into, &id, err, sizeof err) == 1) {
        fprintf(stderr, "a record came again after all were acknowledged\n");
        abort();
      }
      dq_close(q);
    }
  }
  buf_free(&into);
  return 0;
}
