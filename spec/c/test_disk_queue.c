/*
 * test_disk_queue.c - the disk queue in a temporary directory: records come
 * back in order across segments; acks in any order free a segment only
 * once the prefix reaches past it; the size cap and records too big; a
 * restart resumes at the saved cursor, and a crash without one replays the
 * surviving segments; a segment cut at every byte, corruption in a middle
 * segment, foreign segments, random garbage; rewind; records larger than
 * the buffers; a write the file takes only in part; and a million records
 * through append, sync, read and ack; and one queue at a time in a
 * directory.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zlib.h>

#include "check.h"
#include "disk_queue.h"

#define FIXED 40  /* payload bytes where a test counts records per segment */
#define FIXED_REC (8 + FIXED)
#define PER_SEG 5 /* FIXED records in a segment of SEG_5 bytes */
#define SEG_5 (8 + PER_SEG * FIXED_REC)

static char root[] = "/tmp/lumberjit-test-dq-XXXXXX";
static char err[512];

static size_t var_len(unsigned i) { return 16 + i % 48; }

/* Record i's payload: its number, then letters that depend on it. */
static void make_record(unsigned i, size_t len, char *out)
{
  int n = snprintf(out, len, "%u:", i);
  /* snprintf returns what it would have written, which may exceed len. */
  size_t from = n < 0 ? 0 : (size_t)n < len ? (size_t)n : len;
  for (size_t k = from; k < len; k++)
    out[k] = (char)('a' + (i + k) % 26);
}

static void remove_dir(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[600];

  if (!d) return;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(dir);
}

static int count_segments(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;

  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    n += len > 4 && strcmp(e->d_name + len - 4, ".seg") == 0;
  }
  if (d) closedir(d);
  return n;
}

/* Sends stderr away while the queue logs what a test expects it to. */
static int quiet_begin(void)
{
  int saved = dup(2), null = open("/dev/null", O_WRONLY);

  dup2(null, 2);
  close(null);
  return saved;
}

static void quiet_end(int saved)
{
  dup2(saved, 2);
  close(saved);
}

static disk_queue *open_q(const char *dir, uint64_t max_bytes,
                          uint64_t segment_bytes, bool quiet)
{
  disk_queue *q = NULL;
  int saved = quiet ? quiet_begin() : -1;
  int rc = dq_open(&q, dir, max_bytes, segment_bytes, err, sizeof err);

  if (quiet) quiet_end(saved);
  if (rc != 0) {
    fprintf(stderr, "dq_open %s: %s\n", dir, err);
    exit(1);
  }
  return q;
}

/* What a test holds: its queue's directory, the queue, a read buffer. */
typedef struct {
  char dir[512];
  disk_queue *q;
  buf b;
} fixture;

static void start(fixture *f, const char *name, uint64_t max_bytes,
                  uint64_t segment_bytes)
{
  memset(f, 0, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "%s/%s", root, name);
  f->q = open_q(f->dir, max_bytes, segment_bytes, false);
}

static void reopen(fixture *f, uint64_t max_bytes, uint64_t segment_bytes,
                   bool quiet)
{
  CHECK(dq_close(f->q) == 0);
  f->q = open_q(f->dir, max_bytes, segment_bytes, quiet);
}

static void finish(fixture *f)
{
  CHECK(dq_close(f->q) == 0);
  remove_dir(f->dir);
  buf_free(&f->b);
}

/* Appends records from .. from + n, of len bytes (0: of var_len). */
static void append_n(fixture *f, unsigned from, unsigned n, size_t len)
{
  char rec[128];

  for (unsigned i = from; i < from + n; i++) {
    size_t l = len ? len : var_len(i);
    make_record(i, l, rec);
    CHECK(dq_append(f->q, rec, l, err, sizeof err) == DQ_OK);
  }
}

/* Reads the next record and checks that it is record i; returns its id. */
static uint64_t read_expect(fixture *f, unsigned i, size_t len)
{
  char rec[128];
  uint64_t id = UINT64_MAX;
  size_t l = len ? len : var_len(i);
  int rc = dq_read(f->q, &f->b, &id, err, sizeof err);

  bool ok;

  make_record(i, l, rec);
  ok = rc == 1 && f->b.len == l && memcmp(f->b.data, rec, l) == 0;
  if (!ok)
    fprintf(stderr, "expected record %u, got %.*s (rc %d: %s)\n", i,
            (int)f->b.len, f->b.data, rc, rc < 0 ? err : "");
  CHECK(ok);
  return id;
}

static bool nothing_unread(fixture *f)
{
  uint64_t id;
  return dq_read(f->q, &f->b, &id, err, sizeof err) == 0;
}

static dq_stats_t stats(const fixture *f)
{
  dq_stats_t st;
  dq_stats(f->q, &st);
  return st;
}

static size_t read_file(const char *path, char *out, size_t cap)
{
  int fd = open(path, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, out, cap) : -1;

  if (fd >= 0) close(fd);
  CHECK(n >= 0);
  return n > 0 ? (size_t)n : 0;
}

static void write_file(const char *path, const void *data, size_t n)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

  CHECK(fd >= 0 && write(fd, data, n) == (ssize_t)n);
  if (fd >= 0) close(fd);
}

static void segment_path(char *out, size_t n, const char *dir, unsigned seq)
{
  snprintf(out, n, "%s/%020u.seg", dir, seq);
}

static void test_order_across_segments(void)
{
  fixture f;

  start(&f, "order", 1 << 20, 256);
  append_n(&f, 0, 100, 0);
  CHECK(stats(&f).segments > 10);
  CHECK(stats(&f).records == 100 && stats(&f).unread == 100);
  CHECK(dq_sync(f.q, err, sizeof err) == DQ_OK);
  for (unsigned i = 0; i < 100; i++) CHECK(read_expect(&f, i, 0) == i);
  CHECK(nothing_unread(&f));
  CHECK(stats(&f).unread == 0 && stats(&f).records == 100);
  for (unsigned i = 0; i < 100; i++) dq_ack(f.q, i);
  CHECK(stats(&f).records == 0 && stats(&f).bytes == 0);
  CHECK(stats(&f).segments == 0 && count_segments(f.dir) == 0);
  /* A drained queue starts a new segment. */
  append_n(&f, 100, 3, 0);
  for (unsigned i = 100; i < 103; i++) read_expect(&f, i, 0);
  CHECK(count_segments(f.dir) == 1);
  finish(&f);
}

static void test_out_of_order_acks(void)
{
  fixture f;

  start(&f, "acks", 1 << 20, SEG_5);
  append_n(&f, 0, 6 * PER_SEG, FIXED);
  CHECK(stats(&f).segments == 6 && count_segments(f.dir) == 6);
  for (unsigned i = 0; i < 6 * PER_SEG; i++) read_expect(&f, i, FIXED);
  for (unsigned i = PER_SEG; i < 2 * PER_SEG; i++) dq_ack(f.q, i);
  for (unsigned i = 1; i < PER_SEG; i++) dq_ack(f.q, i);
  dq_ack(f.q, 7);  /* twice: ignored */
  dq_ack(f.q, 99); /* never read: ignored */
  CHECK(stats(&f).segments == 6 && count_segments(f.dir) == 6);
  CHECK(stats(&f).records == 6 * PER_SEG - 9);
  dq_ack(f.q, 0);
  CHECK(stats(&f).segments == 4 && count_segments(f.dir) == 4);
  CHECK(stats(&f).records == 4 * PER_SEG);
  CHECK(stats(&f).bytes == 4 * SEG_5);
  for (unsigned i = 6 * PER_SEG; i-- > 2 * PER_SEG + 1;) {
    dq_ack(f.q, i);
    CHECK(stats(&f).segments == 4);
  }
  dq_ack(f.q, 2 * PER_SEG);
  CHECK(stats(&f).segments == 0 && count_segments(f.dir) == 0);
  CHECK(stats(&f).records == 0 && stats(&f).bytes == 0);
  finish(&f);
}

static void test_cap(void)
{
  fixture f;
  char rec[FIXED];
  dq_stats_t before;

  start(&f, "cap", 4 * SEG_5 + 40, SEG_5);
  append_n(&f, 0, 4 * PER_SEG, FIXED);
  before = stats(&f);
  CHECK(before.bytes == 4 * SEG_5);
  /* A fifth segment would take 8 + FIXED_REC more bytes: over the cap. */
  make_record(99, FIXED, rec);
  CHECK(dq_append(f.q, rec, FIXED, err, sizeof err) == DQ_FULL);
  CHECK(stats(&f).bytes == before.bytes);
  CHECK(stats(&f).records == before.records && count_segments(f.dir) == 4);
  for (unsigned i = 0; i < PER_SEG + 2; i++) read_expect(&f, i, FIXED);
  CHECK(dq_append(f.q, rec, FIXED, err, sizeof err) == DQ_FULL);
  for (unsigned i = 0; i < PER_SEG + 2; i++) dq_ack(f.q, i);
  CHECK(stats(&f).bytes == 3 * SEG_5);
  append_n(&f, 4 * PER_SEG, PER_SEG, FIXED);
  CHECK(dq_append(f.q, rec, FIXED, err, sizeof err) == DQ_FULL);
  for (unsigned i = PER_SEG + 2; i < 5 * PER_SEG; i++)
    read_expect(&f, i, FIXED);
  CHECK(nothing_unread(&f));
  finish(&f);
}

/* when_full = "drop_oldest": a full queue deletes its oldest segment to
 * take an append; its unread records count as dropped at once, those read
 * and held once their holder says they will not come back. */
static void test_drop_oldest(void)
{
  fixture f;

  start(&f, "drop", 4 * SEG_5 + 40, SEG_5);
  dq_drop_oldest(f.q);
  append_n(&f, 0, 4 * PER_SEG, FIXED);
  read_expect(&f, 0, FIXED);             /* held: in flight */
  read_expect(&f, 1, FIXED);             /* held, then forgotten */
  dq_ack(f.q, read_expect(&f, 2, FIXED)); /* acknowledged out of order */
  CHECK(dq_fits(f.q, 3 * SEG_5) && !dq_fits(f.q, 4 * SEG_5));
  /* A fifth segment: segment 0 goes, its unread 3 and 4 with it. */
  append_n(&f, 4 * PER_SEG, 1, FIXED);
  CHECK(stats(&f).dropped == 2 && stats(&f).segments == 4);
  CHECK(stats(&f).records == 3 * PER_SEG + 1 && count_segments(f.dir) == 4);
  dq_ack(f.q, 0);                        /* delivered after all */
  CHECK(dq_forget_dropped(f.q, 1) && !dq_forget_dropped(f.q, 1));
  CHECK(stats(&f).dropped == 3);
  for (unsigned i = 5; i < 8; i++) read_expect(&f, i, FIXED);
  /* Segment 1 goes with 5..7 held; a rewind settles them as dropped. */
  append_n(&f, 4 * PER_SEG + 1, PER_SEG, FIXED);
  CHECK(stats(&f).dropped == 5);
  dq_rewind(f.q);
  CHECK(stats(&f).dropped == 8);
  CHECK(dq_save_cursor(f.q, err, sizeof err) == 0);
  reopen(&f, 4 * SEG_5 + 40, SEG_5, false);
  CHECK(stats(&f).records == 4 * PER_SEG - 4);
  for (unsigned i = 2 * PER_SEG; i < 5 * PER_SEG + 1; i++)
    read_expect(&f, i, FIXED);
  CHECK(nothing_unread(&f));
  finish(&f);
}

static void test_too_big(void)
{
  fixture f;
  char rec[256] = {0};

  start(&f, "big", 4096, 256);
  CHECK(dq_append(f.q, rec, 256 - 16 + 1, err, sizeof err) == DQ_TOO_BIG);
  CHECK(dq_append(f.q, rec, (size_t)DQ_RECORD_MAX + 1, err, sizeof err) ==
        DQ_TOO_BIG);
  CHECK(stats(&f).bytes == 0 && count_segments(f.dir) == 0);
  CHECK(dq_append(f.q, rec, 256 - 16, err, sizeof err) == DQ_OK);
  CHECK(stats(&f).bytes == 256);
  finish(&f);
  start(&f, "big", 128, 1024);
  CHECK(dq_append(f.q, rec, 128 - 16 + 1, err, sizeof err) == DQ_TOO_BIG);
  CHECK(dq_append(f.q, rec, 128 - 16, err, sizeof err) == DQ_OK);
  CHECK(dq_append(f.q, rec, 0, err, sizeof err) == DQ_FULL);
  finish(&f);
  CHECK(dq_open(&f.q, f.dir, 63, 1024, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "at least 64");
}

static void test_restart_at_cursor(void)
{
  fixture f;

  start(&f, "restart", 1 << 20, 512);
  append_n(&f, 0, 100, 0);
  for (unsigned i = 0; i < 60; i++) read_expect(&f, i, 0);
  for (unsigned i = 0; i < 50; i++) dq_ack(f.q, i);
  dq_ack(f.q, 55);
  CHECK(dq_save_cursor(f.q, err, sizeof err) == 0);
  reopen(&f, 1 << 20, 512, false);
  CHECK(stats(&f).records == 50 && stats(&f).unread == 50);
  for (unsigned i = 50; i < 100; i++) CHECK(read_expect(&f, i, 0) == i - 50);
  CHECK(nothing_unread(&f));
  append_n(&f, 100, 10, 0);
  reopen(&f, 1 << 20, 512, false); /* nothing acknowledged: all comes again */
  CHECK(stats(&f).records == 60);
  for (unsigned i = 50; i < 110; i++) read_expect(&f, i, 0);
  for (unsigned i = 0; i < 60; i++) dq_ack(f.q, i);
  CHECK(stats(&f).segments == 0);
  /* Drained and saved: nothing comes back, new records do. */
  reopen(&f, 1 << 20, 512, false);
  CHECK(stats(&f).records == 0 && nothing_unread(&f));
  append_n(&f, 110, 2, 0);
  CHECK(dq_sync(f.q, err, sizeof err) == DQ_OK);
  reopen(&f, 1 << 20, 512, false);
  read_expect(&f, 110, 0);
  read_expect(&f, 111, 0);
  CHECK(nothing_unread(&f));
  finish(&f);
}

/* A cursor a power loss changed (a digit that still parses would delete
 * segments or skip records) fails its check: every segment is read again. */
static void test_damaged_cursor(void)
{
  fixture f;
  char path[600], text[160];
  size_t len;
  FILE *c;

  start(&f, "cursor-damage", 1 << 20, 512);
  append_n(&f, 0, 100, 0);
  for (unsigned i = 0; i < 50; i++) {
    read_expect(&f, i, 0);
    dq_ack(f.q, i);
  }
  CHECK(dq_close(f.q) == 0);
  f.q = NULL;
  snprintf(path, sizeof path, "%s/cursor", f.dir);
  c = fopen(path, "r+");
  CHECK(c != NULL);
  len = fread(text, 1, sizeof text - 1, c);
  text[len] = '\0';
  /* The offset's first digit, one more. */
  char *digit = strstr(text, "offset ") + 7;
  *digit = *digit == '9' ? '1' : (char)(*digit + 1);
  CHECK(freopen(path, "w", c) != NULL && fwrite(text, 1, len, c) == len);
  fclose(c);
  f.q = open_q(f.dir, 1 << 20, 512, true);
  /* From the first segment left, whole: some of the first 50 again. */
  CHECK(stats(&f).records > 50);
  uint64_t first = stats(&f).records;
  for (unsigned i = 100 - (unsigned)first; i < 100; i++) read_expect(&f, i, 0);
  CHECK(nothing_unread(&f));
  finish(&f);
}

/* A child process appends, acknowledges a prefix and dies without saving
 * the cursor: the segments it did not delete come again, whole. */
static void test_crash_without_cursor(void)
{
  const unsigned acked = 11 * PER_SEG + 3;
  fixture f;
  pid_t pid;
  int status = -1;

  fflush(NULL);
  pid = fork();
  if (pid == 0) {
    int failed_before = check_failed;
    start(&f, "crash", 1 << 20, SEG_5);
    append_n(&f, 0, 100, FIXED);
    dq_sync(f.q, err, sizeof err);
    for (unsigned i = 0; i < acked + 5; i++) read_expect(&f, i, FIXED);
    for (unsigned i = 0; i < acked; i++) dq_ack(f.q, i);
    _exit(check_failed > failed_before);
  }
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  start(&f, "crash", 1 << 20, SEG_5);
  CHECK(stats(&f).records == 100 - 11 * PER_SEG);
  for (unsigned i = 11 * PER_SEG; i < 100; i++) read_expect(&f, i, FIXED);
  CHECK(nothing_unread(&f));
  finish(&f);
}

/* A segment of five records cut at every byte, as a power loss could
 * leave it: what is whole is read, the rest is cut off and counted. */
static void test_truncated_at_every_byte(void)
{
  fixture f;
  char seg[600], cursor[600], full[4096];
  uint64_t ends[6] = {8};
  size_t size;

  start(&f, "torn", 1 << 20, 4096);
  segment_path(seg, sizeof seg, f.dir, 1);
  snprintf(cursor, sizeof cursor, "%s/cursor", f.dir);
  append_n(&f, 0, 5, 0);
  CHECK(dq_close(f.q) == 0);
  size = read_file(seg, full, sizeof full);
  for (unsigned i = 0; i < 5; i++) ends[i + 1] = ends[i] + 8 + var_len(i);
  CHECK(size == ends[5]);
  for (size_t k = 0; k <= size; k++) {
    unsigned whole = 0;
    struct stat sb;
    dq_stats_t st;
    while (whole < 5 && ends[whole + 1] <= k) whole++;
    write_file(seg, full, k);
    unlink(cursor); /* as if never saved: the segment is read from its start */
    f.q = open_q(f.dir, 1 << 20, 4096, true);
    st = stats(&f);
    CHECK(st.records == whole);
    CHECK(st.torn_bytes == (k < 8 ? k : k - ends[whole]));
    CHECK(st.corrupt_records == 0);
    for (unsigned i = 0; i < whole; i++) read_expect(&f, i, 0);
    CHECK(nothing_unread(&f));
    /* Cut; deleted when it held no record. */
    CHECK(whole ? stat(seg, &sb) == 0 && (uint64_t)sb.st_size == ends[whole]
                : stat(seg, &sb) != 0);
    if (k == ends[4] + 5) { /* appends go on after the cut */
      append_n(&f, 4, 1, 0);
      read_expect(&f, 4, 0);
    }
    CHECK(dq_close(f.q) == 0);
  }
  f.q = NULL;
  finish(&f);
}

/* Three segments; the second is damaged at its third record. */
static void corrupt_middle(bool in_length)
{
  const size_t at = 8 + 2 * FIXED_REC;
  fixture f;
  char seg[600], bytes[SEG_5];
  dq_stats_t st;

  start(&f, "corrupt", 1 << 20, SEG_5);
  segment_path(seg, sizeof seg, f.dir, 2);
  append_n(&f, 0, 3 * PER_SEG, FIXED);
  CHECK(dq_close(f.q) == 0);
  CHECK(read_file(seg, bytes, sizeof bytes) == SEG_5);
  if (in_length) bytes[at + 2] = 0x7f;
  else bytes[at + 8 + 3] ^= 1;
  write_file(seg, bytes, sizeof bytes);
  f.q = open_q(f.dir, 1 << 20, SEG_5, true);
  st = stats(&f);
  /* A bad length breaks the chain: only the record found there counts. */
  CHECK(st.corrupt_records == (in_length ? 1 : PER_SEG - 2));
  CHECK(st.corrupt_bytes == SEG_5 - at);
  CHECK(st.torn_bytes == 0);
  CHECK(st.records == 3 * PER_SEG - (PER_SEG - 2));
  CHECK(st.bytes == 3 * SEG_5 - (SEG_5 - at));
  for (unsigned i = 0; i < PER_SEG + 2; i++) read_expect(&f, i, FIXED);
  for (unsigned i = 2 * PER_SEG; i < 3 * PER_SEG; i++)
    read_expect(&f, i, FIXED);
  CHECK(nothing_unread(&f));
  reopen(&f, 1 << 20, SEG_5, false); /* cut: found once */
  CHECK(stats(&f).corrupt_records == 0 && stats(&f).records == 12);
  finish(&f);
}

static void test_foreign_files(void)
{
  fixture f;
  disk_queue *q = NULL;
  char path[600];

  start(&f, "foreign", 1 << 20, 4096);
  append_n(&f, 0, 3, 0);
  CHECK(dq_close(f.q) == 0);
  snprintf(path, sizeof path, "%s/notes.txt", f.dir);
  write_file(path, "not a segment", 13);
  snprintf(path, sizeof path, "%s/cursor.tmp", f.dir);
  write_file(path, "half", 4);
  snprintf(path, sizeof path, "%s/123.seg", f.dir);
  write_file(path, "short name", 10);
  f.q = open_q(f.dir, 1 << 20, 4096, false);
  for (unsigned i = 0; i < 3; i++) read_expect(&f, i, 0);
  CHECK(dq_close(f.q) == 0);
  f.q = NULL;

  /* A segment whose header is not ours (a power loss changed it, or a
   * newer format version) is moved aside, and the queue opens with the
   * others. */
  const char *headers[] = {"NOTAQUEUEFILE", "LJDQ\3\0\0\0"};
  for (int i = 0; i < 2; i++) {
    size_t len = i ? 8 : 13;
    segment_path(path, sizeof path, f.dir, 7);
    write_file(path, headers[i], len);
    f.q = open_q(f.dir, 1 << 20, 4096, true);
    CHECK(stats(&f).corrupt_bytes == len);
    for (unsigned r = 0; r < 3; r++) read_expect(&f, r, 0);
    CHECK(nothing_unread(&f));
    CHECK(dq_close(f.q) == 0);
    f.q = NULL;
    CHECK(access(path, F_OK) != 0);
    strcat(path, ".damaged");
    CHECK(access(path, F_OK) == 0);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/plain-file", root);
  write_file(path, "x", 1);
  CHECK(dq_open(&q, path, 1 << 20, 4096, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "plain-file");
  unlink(path);
  finish(&f);
}

/* A queue below directories that do not exist yet (a disk_buffer below a
 * state_dir the same start makes later) makes them. */
static void test_missing_parents(void)
{
  fixture f;

  memset(&f, 0, sizeof f);
  snprintf(f.dir, sizeof f.dir, "%s/state/spool/out", root);
  f.q = open_q(f.dir, 1 << 20, 4096, false);
  append_n(&f, 0, 3, 0);
  reopen(&f, 1 << 20, 4096, false);
  for (unsigned i = 0; i < 3; i++) read_expect(&f, i, 0);
  CHECK(nothing_unread(&f));
  finish(&f);
  snprintf(f.dir, sizeof f.dir, "%s/state/spool", root);
  CHECK(rmdir(f.dir) == 0);
  snprintf(f.dir, sizeof f.dir, "%s/state", root);
  CHECK(rmdir(f.dir) == 0);
}

/* Version 1 segments, whose CRC is of the payload alone, are read, and
 * appends go on in a new segment of version 2, whose CRC covers the
 * length too: 8 zero bytes (a file a power loss extended with zeros) are
 * then a torn tail, not an empty record. */
static void test_format_versions(void)
{
  fixture f;
  char path[600], rec[128], v1[64];
  size_t n = 0, len = var_len(0);
  uint32_t crc;
  uint64_t id;

  /* The queue is made empty, closed, and given a version 1 segment. */
  start(&f, "versions", 1 << 20, 4096);
  CHECK(dq_close(f.q) == 0);
  make_record(0, len, rec);
  memcpy(v1, "LJDQ\1\0\0\0", 8);
  n = 8;
  v1[n] = (char)len;
  memset(v1 + n + 1, 0, 3);
  crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)rec, (uInt)len);
  for (int i = 0; i < 4; i++) v1[n + 4 + i] = (char)(crc >> (8 * i));
  memcpy(v1 + n + 8, rec, len);
  n += 8 + len;
  segment_path(path, sizeof path, f.dir, 1);
  write_file(path, v1, n);
  f.q = open_q(f.dir, 1 << 20, 4096, false);
  append_n(&f, 1, 2, 0);
  for (unsigned i = 0; i < 3; i++) read_expect(&f, i, 0);
  CHECK(nothing_unread(&f));
  CHECK(count_segments(f.dir) == 2);
  CHECK(read_file(path, v1, sizeof v1) == n); /* appended to no more */

  /* Zeros after the records of a version 2 segment are cut as torn. */
  CHECK(dq_close(f.q) == 0);
  segment_path(path, sizeof path, f.dir, 2);
  int fd = open(path, O_WRONLY | O_APPEND);
  CHECK(fd >= 0 && write(fd, "\0\0\0\0\0\0\0\0", 8) == 8);
  if (fd >= 0) close(fd);
  f.q = open_q(f.dir, 1 << 20, 4096, true);
  CHECK(stats(&f).torn_bytes == 8);
  for (unsigned i = 0; i < 3; i++) dq_ack(f.q, read_expect(&f, i, 0));
  CHECK(dq_read(f.q, &f.b, &id, err, sizeof err) == 0);
  finish(&f);
}

/* flock's lock belongs to the open file, so a second open in this
 * process stands for a second process. */
static void test_locked(void)
{
  fixture f;
  disk_queue *q = NULL;

  start(&f, "locked", 1 << 20, 4096);
  append_n(&f, 0, 3, 0);
  CHECK(dq_sync(f.q, err, sizeof err) == DQ_OK);
  CHECK(dq_open(&q, f.dir, 1 << 20, 4096, err, sizeof err) == -1 && !q);
  CHECK_CONTAINS(err, f.dir);
  CHECK_CONTAINS(err, "another process uses it");
  /* The failed open left the queue as it was. */
  for (unsigned i = 0; i < 3; i++) read_expect(&f, i, 0);
  CHECK(nothing_unread(&f));
  CHECK(dq_close(f.q) == 0);
  f.q = open_q(f.dir, 1 << 20, 4096, false);
  for (unsigned i = 0; i < 3; i++) read_expect(&f, i, 0);
  finish(&f);
}

static void test_rewind(void)
{
  fixture f;

  start(&f, "rewind", 1 << 20, 256);
  append_n(&f, 0, 12, 0);
  for (unsigned i = 0; i < 10; i++) read_expect(&f, i, 0);
  dq_ack(f.q, 0);
  dq_ack(f.q, 3);
  dq_ack(f.q, 5);
  dq_rewind(f.q);
  CHECK(stats(&f).unread == 9 && stats(&f).records == 9);
  CHECK(read_expect(&f, 1, 0) == 1);
  CHECK(read_expect(&f, 2, 0) == 2);
  CHECK(read_expect(&f, 4, 0) == 4);
  dq_rewind(f.q);
  dq_ack(f.q, 1); /* acknowledged before it is read again */
  CHECK(stats(&f).unread == 8);
  CHECK(read_expect(&f, 2, 0) == 2);
  CHECK(read_expect(&f, 4, 0) == 4);
  for (unsigned i = 6; i < 12; i++) CHECK(read_expect(&f, i, 0) == i);
  CHECK(nothing_unread(&f));
  dq_rewind(f.q);
  for (unsigned i = 2; i < 12; i++) dq_ack(f.q, i);
  CHECK(stats(&f).records == 0 && stats(&f).unread == 0);
  CHECK(nothing_unread(&f) && stats(&f).segments == 0);
  finish(&f);
}

/* Records larger than the read window and the write buffer, read from
 * the buffer, then from the file after a reopen (scanned in pieces). */
static void test_large_records(void)
{
  static const size_t sizes[] = {300 << 10, 5, 700 << 10, 64 << 10};
  fixture f;
  buf want = {0};
  uint64_t id;

  start(&f, "large", 16 << 20, 4 << 20);
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < 4; i++) {
      buf_clear(&want);
      for (size_t k = 0; k < sizes[i]; k++) {
        char c = (char)(k * 7 + i);
        buf_append(&want, &c, 1);
      }
      if (pass == 0)
        CHECK(dq_append(f.q, want.data, want.len, err, sizeof err) == DQ_OK);
      CHECK(dq_read(f.q, &f.b, &id, err, sizeof err) == 1 && id == i);
      CHECK(f.b.len == want.len && memcmp(f.b.data, want.data, f.b.len) == 0);
    }
    reopen(&f, 16 << 20, 4 << 20, false);
    CHECK(stats(&f).records == 4);
  }
  finish(&f);
  buf_free(&want);
}

/* A write the file takes only in part (here at a file size limit): the
 * whole records stay, the torn one is cut off, the rest wait in the
 * buffer and are all read; once the limit is lifted they are written. */
static void test_partial_write(void)
{
  fixture f;
  char seg[600];
  struct rlimit old, small;
  struct stat sb;

  start(&f, "partial", 1 << 20, 1 << 20);
  segment_path(seg, sizeof seg, f.dir, 1);
  append_n(&f, 0, 200, 0);
  signal(SIGXFSZ, SIG_IGN);
  CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
  small = old;
  small.rlim_cur = 1000;
  CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
  CHECK(dq_sync(f.q, err, sizeof err) == DQ_ERROR);
  CHECK_CONTAINS(err, "00000000000000000001.seg");
  CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
  signal(SIGXFSZ, SIG_DFL);
  CHECK(stat(seg, &sb) == 0 && sb.st_size <= 1000 && sb.st_size > 900);
  CHECK(stats(&f).records == 200);
  for (unsigned i = 0; i < 200; i++) read_expect(&f, i, 0);
  CHECK(dq_sync(f.q, err, sizeof err) == DQ_OK);
  reopen(&f, 1 << 20, 1 << 20, false);
  CHECK(stats(&f).records == 200 && stats(&f).torn_bytes == 0);
  for (unsigned i = 0; i < 200; i++) read_expect(&f, i, 0);
  finish(&f);
}

static uint32_t rng_state = 12345;
static uint32_t rng(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return rng_state;
}

/* One segment of random bytes: after a good header (of either format
 * version) or not, with plausible record lengths or not. */
static size_t random_segment(char *out, size_t cap)
{
  size_t n = rng() % cap, k = 0;

  if (rng() % 4 && n >= 8) {
    memcpy(out, rng() % 2 ? "LJDQ\1\0\0\0" : "LJDQ\2\0\0\0", 8);
    k = 8;
  }
  while (k < n) {
    if (rng() % 3 == 0 && n - k >= 8) {
      uint32_t len = rng() % 64;
      for (int i = 0; i < 4; i++) out[k + i] = (char)(len >> (8 * i));
      k += 4;
    } else {
      out[k++] = (char)rng();
    }
  }
  return n;
}

static void test_garbage(void)
{
  fixture f;
  char path[600], bytes[700];

  memset(&f, 0, sizeof f);
  snprintf(f.dir, sizeof f.dir, "%s/garbage", root);
  for (int round = 0; round < 400; round++) {
    unsigned nsegs = 1 + rng() % 3;
    int saved, rc;
    mkdir(f.dir, 0700);
    for (unsigned s = 1; s <= nsegs; s++) {
      segment_path(path, sizeof path, f.dir, s);
      write_file(path, bytes, random_segment(bytes, sizeof bytes));
    }
    if (rng() % 2) {
      snprintf(path, sizeof path, "%s/cursor", f.dir);
      snprintf(bytes, sizeof bytes, "lumberjit disk queue cursor 1\nsegment %u"
               "\noffset %u\n", rng() % 4, rng() % 300);
      write_file(path, bytes, strlen(bytes));
    }
    saved = quiet_begin();
    rc = dq_open(&f.q, f.dir, 1 << 20, 512, err, sizeof err);
    quiet_end(saved);
    if (rc == 0) {
      uint64_t id;
      while ((rc = dq_read(f.q, &f.b, &id, err, sizeof err)) == 1)
        dq_ack(f.q, id);
      CHECK(rc == 0);
      CHECK(stats(&f).records == 0);
      CHECK(dq_append(f.q, "after", 5, err, sizeof err) == DQ_OK);
      CHECK(dq_close(f.q) == 0);
    } else {
      CHECK_CONTAINS(err, ".seg");
    }
    remove_dir(f.dir);
  }
  buf_free(&f.b);
}

/* A million records through the queue as an output would use it: batches
 * appended and synced, read back behind them, acknowledged out of order. */
static void test_million(void)
{
  enum { N = 1000000, BATCH = 10000 };
  fixture f;
  unsigned appended = 0, got = 0;
  uint64_t pending = UINT64_MAX;
  char rec[128];
  bool ok = true;

  start(&f, "million", 256u << 20, 4u << 20);
  while (got < N) {
    for (unsigned end = appended + BATCH; appended < N && appended < end;
         appended++) {
      make_record(appended, var_len(appended), rec);
      ok &= dq_append(f.q, rec, var_len(appended), err, sizeof err) == DQ_OK;
    }
    ok &= dq_sync(f.q, err, sizeof err) == DQ_OK;
    for (unsigned n = 0; n < BATCH * 3 / 4 || appended == N; n++) {
      uint64_t id;
      if (dq_read(f.q, &f.b, &id, err, sizeof err) != 1) break;
      make_record(got, var_len(got), rec);
      ok &= id == got && f.b.len == var_len(got) &&
            memcmp(f.b.data, rec, f.b.len) == 0;
      got++;
      /* Acknowledge in pairs, the second first. */
      if (pending == UINT64_MAX) {
        pending = id;
      } else {
        dq_ack(f.q, id);
        dq_ack(f.q, pending);
        pending = UINT64_MAX;
      }
    }
  }
  CHECK(ok);
  CHECK(got == N && nothing_unread(&f));
  CHECK(stats(&f).records == 0 && stats(&f).segments == 0);
  finish(&f);
}

int main(void)
{
  if (!mkdtemp(root)) return 2;
  test_order_across_segments();
  test_out_of_order_acks();
  test_cap();
  test_drop_oldest();
  test_too_big();
  test_restart_at_cursor();
  test_damaged_cursor();
  test_crash_without_cursor();
  test_truncated_at_every_byte();
  corrupt_middle(false);
  corrupt_middle(true);
  test_foreign_files();
  test_format_versions();
  test_locked();
  test_rewind();
  test_large_records();
  test_partial_write();
  test_garbage();
  test_missing_parents();
  test_million();
  rmdir(root);
  return check_summary();
}
