/*
 * disk_queue.c - see disk_queue.h.
 *
 * Records are known by id: consecutive numbers in append order, starting
 * at 0 with the first record past the cursor when the queue is opened.
 * Each segment holds the ids first_id .. first_id + nrecs, so a position
 * in the queue is an id, and where that record starts in its segment.
 *
 *   ack_base <= next_id <= max_read <= end_id
 *
 * Every id below ack_base is acknowledged, and its segment deleted once
 * the whole segment is. ack_base .. max_read were read: the ring holds
 * each one's length and whether it was acknowledged (out of order). next_id
 * is read next: it falls below max_read only after a rewind, and reading
 * again skips what the ring says was acknowledged meanwhile. end_id is the
 * next append's.
 *
 * A queue that drops its oldest (dq_drop_oldest) moves ack_base past the
 * segment it drops; the records of it read and not acknowledged then,
 * which the caller still holds, are ids drop_lo .. drop_hi, of which
 * held_dropped are not yet settled: an ack of one (it arrived after all),
 * dq_forget_dropped or a rewind (it will not) settles it.
 */
#include "disk_queue.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "le.h"
#include "log.h"

#define SEG_HEADER 8          /* "LJDQ", the format version */
#define REC_HEADER 8          /* length, CRC */
/* Version 2: a record's CRC-32 covers its length field too, so that 8
 * zero bytes (a file a power loss extended with zeros) are no record;
 * version 1 took them for an empty one. Version 1 segments are read. */
#define FORMAT_VERSION 2
#define MIN_BYTES 64          /* for max_bytes and segment_bytes */
#define WINDOW_BYTES (256u << 10)
#define WRITE_BYTES (64u << 10) /* appends buffered before a write */
#define RING_FIRST 1024
#define ACKED 0x80000000u     /* in a ring entry, above the length */
#define NAME_LEN 32           /* a segment's file name, NUL included */
#define DROP_LOG_NS (10ull * 1000000000) /* drops logged at most this often */
/* The cursor file: these lines, then "check %08x\n", the CRC-32 of them,
 * so that a changed digit (which would delete segments, or skip records)
 * is found. Version 1 had no check line. */
#define CURSOR_FORMAT "lumberjit disk queue cursor 2\nsegment %" PRIu64 \
                      "\noffset %" PRIu64 "\n"

typedef struct {
  uint64_t seq;
  uint32_t version;    /* its format: 1 is read, never appended to */
  uint64_t size;       /* to the end of its last good record */
  uint64_t first_id;
  uint64_t nrecs;      /* its records from first_id on */
} segment;

struct disk_queue {
  char *dir;
  int dirfd;
  int lockfd;          /* the lock file, flock'ed while the queue is open */
  uint64_t max_bytes, segment_bytes;
  segment *segs;       /* oldest first; appends go to the last */
  size_t nsegs, segs_cap;
  uint64_t next_seq;   /* the number of the next segment created */
  int wfd;             /* the last segment's, or -1 */
  uint64_t written;    /* bytes of it in the file; then come those of */
  buf pending;         /* the records appended since, not yet written */
  bool unsynced;       /* written to wfd since its last fdatasync */
  uint64_t end_id;     /* the id the next append gets */

  size_t r_idx;        /* the segment holding next_id */
  uint64_t r_off;      /* where record next_id starts in it */
  uint64_t next_id, max_read;
  int rfd;             /* segment rfd_seq, open for reading, or -1 */
  uint64_t rfd_seq;
  char *window;        /* bytes w_off .. w_off + w_len of segment w_seq */
  uint64_t w_seq, w_off;
  size_t w_len;

  uint64_t ack_base;   /* every id before it is acknowledged */
  uint64_t cursor_off; /* where record ack_base starts in segs[0] */
  uint32_t *ring;      /* ids ack_base .. max_read: length | ACKED */
  size_t ring_cap;     /* a power of two */
  uint64_t acked_ahead; /* entries of the ring marked ACKED */
  uint64_t unread;
  bool saved;          /* the cursor file says saved_seq, saved_off */
  uint64_t saved_seq, saved_off;

  uint64_t bytes, corrupt_records, corrupt_bytes, torn_bytes;

  bool drop_oldest;    /* when_full = "drop_oldest" */
  uint64_t dropped;    /* records dropped, settled */
  uint64_t drop_lo, drop_hi, held_dropped;
  uint64_t drop_logged_ns, dropped_unlogged, segs_unlogged;
};

static void make_header(unsigned char *h, uint32_t version)
{
  memcpy(h, "LJDQ", 4);
  le_put(h + 4, version, 4);
}

/* Where a record's CRC-32 starts, given its length field at len4: from
 * nothing in version 1 (the payload's alone), from the length field in
 * version 2 (the payload's follows). */
static uLong record_crc_start(uint32_t version, const unsigned char *len4)
{
  uLong crc = crc32(0L, Z_NULL, 0);

  return version >= 2 ? crc32(crc, len4, 4) : crc;
}

static void seg_name(char *name, uint64_t seq)
{
  snprintf(name, NAME_LEN, "%020" PRIu64 ".seg", seq);
}

/* A segment's number, when name is one's: 20 digits and ".seg". */
static bool parse_seg_name(const char *name, uint64_t *seq)
{
  uint64_t v = 0;

  for (int i = 0; i < 20; i++) {
    unsigned d = (unsigned)(name[i] - '0');
    if (d > 9 || v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (strcmp(name + 20, ".seg") != 0) return false;
  *seq = v;
  return true;
}

static uint32_t *ring_at(const disk_queue *q, uint64_t id)
{
  return &q->ring[id & (q->ring_cap - 1)];
}

/* ---- reading records ---- */

/* Bytes off .. off + n (n at most WINDOW_BYTES) of segment seq, open on fd
 * and end bytes long: from the window, refilled from off when they are not
 * all in it. NULL when the file ends first (errno 0) or on an I/O error. */
static const unsigned char *window_at(disk_queue *q, int fd, uint64_t seq,
                                      uint64_t off, size_t n, uint64_t end)
{
  size_t want = end - off < WINDOW_BYTES ? (size_t)(end - off) : WINDOW_BYTES;
  size_t got = 0;

  /* A record lies whole in the file or whole in pending. */
  if (q->pending.len && seq == q->segs[q->nsegs - 1].seq && off >= q->written)
    return (const unsigned char *)q->pending.data + (off - q->written);
  if (q->w_seq == seq && off >= q->w_off && n <= q->w_len &&
      off - q->w_off <= q->w_len - n)
    return (const unsigned char *)q->window + (off - q->w_off);
  q->w_len = 0;
  while (got < want) {
    ssize_t r = pread(fd, q->window + got, want - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return NULL;
    if (r == 0) break;
    got += (size_t)r;
  }
  errno = 0;
  if (got < n) return NULL;
  q->w_seq = seq;
  q->w_off = off;
  q->w_len = got;
  return (const unsigned char *)q->window;
}

/* Checks the record at off of segment s (open on fd, end bytes long):
 * its length stays in the file and its CRC matches. Its payload is
 * appended to into, unless NULL. 0: good, *len is its length; 1: bad; -1:
 * an I/O error or no memory (errno). */
static int read_record(disk_queue *q, int fd, const segment *s, uint64_t off,
                       uint64_t end, buf *into, uint32_t *len)
{
  const unsigned char *p;
  uint64_t seq = s->seq;
  uint32_t n, want;
  uLong crc;

  if (end - off < REC_HEADER) return 1;
  if (!(p = window_at(q, fd, seq, off, REC_HEADER, end))) return errno ? -1 : 1;
  n = (uint32_t)le_get(p, 4);
  want = (uint32_t)le_get(p + 4, 4);
  crc = record_crc_start(s->version, p);
  if (n > DQ_RECORD_MAX || n > end - off - REC_HEADER) return 1;
  if (into && !buf_reserve(into, n)) {
    errno = ENOMEM;
    return -1;
  }
  for (uint32_t done = 0; done < n;) {
    size_t chunk = n - done < WINDOW_BYTES ? n - done : WINDOW_BYTES;
    p = window_at(q, fd, seq, off + REC_HEADER + done, chunk, end);
    if (!p) return errno ? -1 : 1;
    crc = crc32(crc, p, (uInt)chunk);
    if (into) buf_append(into, p, chunk);
    done += (uint32_t)chunk;
  }
  if (crc != want) return 1;
  *len = n;
  return 0;
}

/* ---- segments on disk ---- */

static void remove_segment_file(disk_queue *q, uint64_t seq)
{
  char name[NAME_LEN];

  seg_name(name, seq);
  if (unlinkat(q->dirfd, name, 0) != 0 || fsync(q->dirfd) != 0)
    log_warning("disk queue %s: cannot delete %s: %s", q->dir, name,
            strerror(errno));
}

static int grow_segs(disk_queue *q)
{
  size_t cap = q->segs_cap ? 2 * q->segs_cap : 16;
  segment *s;

  if (q->nsegs < q->segs_cap) return 0;
  if (!(s = realloc(q->segs, cap * sizeof *s))) return -1;
  q->segs = s;
  q->segs_cap = cap;
  return 0;
}

static int open_segment_file(disk_queue *q, uint64_t seq, int *fd,
                             uint64_t *size, char *err, size_t errlen)
{
  char name[NAME_LEN];
  struct stat sb;

  seg_name(name, seq);
  *fd = openat(q->dirfd, name, O_RDWR | O_CLOEXEC);
  if (*fd >= 0 && fstat(*fd, &sb) == 0) {
    *size = (uint64_t)sb.st_size;
    return 0;
  }
  snprintf(err, errlen, "disk queue %s: cannot open %s: %s", q->dir, name,
           strerror(errno));
  if (*fd >= 0) close(*fd);
  return -1;
}

/* Whether segment seq (open on fd, size bytes) starts with a header of a
 * format read here (*version says which). 0: it does; 1: it holds only a
 * beginning of one (a crash cut its creation short); 2: it does not (a
 * power loss changed it: a segment is short while its first appends go to
 * the page its header is on; or a newer lumberjit's format); -1: it
 * cannot be read (err says why). */
static int check_header(disk_queue *q, uint64_t seq, int fd, uint64_t size,
                        uint32_t *version, char *err, size_t errlen)
{
  unsigned char got[SEG_HEADER], want[SEG_HEADER];
  size_t n = size < SEG_HEADER ? (size_t)size : SEG_HEADER;
  char name[NAME_LEN];

  seg_name(name, seq);
  if (pread(fd, got, n, 0) != (ssize_t)n) {
    snprintf(err, errlen, "disk queue %s: cannot read %s: %s", q->dir, name,
             strerror(errno));
    return -1;
  }
  for (*version = FORMAT_VERSION; *version >= 1; (*version)--) {
    make_header(want, *version);
    if (memcmp(got, want, n) == 0) return n < SEG_HEADER;
  }
  return 2;
}

/* A segment whose header is not ours: nothing in it can be trusted to be
 * ours, so it is not cut or deleted but renamed out of the queue, for
 * whoever looks into it, and its bytes counted as corrupt. Refusing to
 * start instead would stop an edge box collecting anything more; a
 * byte a power loss changed cannot be told from a newer format version. */
static int set_aside(disk_queue *q, uint64_t seq, uint64_t size, char *err,
                     size_t errlen)
{
  char name[NAME_LEN], aside[NAME_LEN + 8];

  seg_name(name, seq);
  snprintf(aside, sizeof aside, "%s.damaged", name);
  if (renameat(q->dirfd, name, q->dirfd, aside) != 0 || fsync(q->dirfd) != 0) {
    snprintf(err, errlen, "disk queue %s: cannot move %s aside: %s", q->dir,
             name, strerror(errno));
    return -1;
  }
  log_warning("disk queue %s: %s does not start with the header of format "
              "version %d (a power loss changed it, or a newer lumberjit "
              "wrote it): moved it to %s, its %" PRIu64 " bytes unread",
              q->dir, name, FORMAT_VERSION, aside, size);
  q->corrupt_bytes += size;
  return 0;
}

/* Drops the segments that hold only a beginning of a header from the
 * directory and from seqs; -1 when one is not ours. */
static int check_headers(disk_queue *q, uint64_t *seqs, size_t *n, char *err,
                         size_t errlen)
{
  size_t kept = 0;

  for (size_t i = 0; i < *n; i++) {
    uint64_t size;
    uint32_t version;
    int fd, rc;
    if (open_segment_file(q, seqs[i], &fd, &size, err, errlen) != 0) return -1;
    rc = check_header(q, seqs[i], fd, size, &version, err, errlen);
    close(fd);
    if (rc < 0) return -1;
    if (rc == 0) {
      seqs[kept++] = seqs[i];
      continue;
    }
    if (rc == 2) {
      if (set_aside(q, seqs[i], size, err, errlen) != 0) return -1;
      continue;
    }
    log_warning("disk queue %s: deleted segment %" PRIu64 ", whose creation a "
            "crash cut short (%" PRIu64 " bytes, no records)", q->dir,
            seqs[i], size);
    q->torn_bytes += size;
    remove_segment_file(q, seqs[i]);
  }
  *n = kept;
  return 0;
}

/* How many records start at off or later, following the lengths from off
 * while they stay inside the file (the one at off counts, however bad). */
static uint64_t records_from(disk_queue *q, int fd, uint64_t seq, uint64_t off,
                             uint64_t size)
{
  uint64_t n = 0;

  while (off < size) {
    const unsigned char *p;
    uint32_t len;
    n++;
    if (size - off < REC_HEADER ||
        !(p = window_at(q, fd, seq, off, REC_HEADER, size)))
      break;
    len = (uint32_t)le_get(p, 4);
    if (len > size - off - REC_HEADER) break;
    off += REC_HEADER + len;
  }
  return n;
}

/* Cuts segment seq (open on fd, size bytes) at off, where its first bad
 * record starts: a torn tail in the last segment, corruption elsewhere. */
static int cut_bad_tail(disk_queue *q, int fd, uint64_t seq, uint64_t off,
                        uint64_t size, bool last)
{
  char name[NAME_LEN];
  uint64_t cut = size - off, lost = records_from(q, fd, seq, off, size);

  seg_name(name, seq);
  if (last) {
    /* What a power loss can change is not only the last record: the
     * records after a torn one are cut with it, and counted. */
    q->torn_bytes += cut;
    log_warning("disk queue %s: cut %" PRIu64 " bytes off the end of %s at "
            "offset %" PRIu64 ", %" PRIu64 " records, the first of them torn "
            "(an append that a crash or power loss cut short)", q->dir, cut,
            name, off, lost);
  } else {
    q->corrupt_records += lost;
    q->corrupt_bytes += cut;
    log_warning("disk queue %s: %s is corrupt at offset %" PRIu64 ": cut there, "
            "losing %" PRIu64 " records (%" PRIu64 " bytes)", q->dir, name,
            off, lost, cut);
  }
  q->w_len = 0; /* it may hold the bytes cut */
  return ftruncate(fd, (off_t)off);
}

/* Checks every record of segment s (open on fd, size bytes), cuts it after
 * its last good one, and counts into s->nrecs those from *from (the
 * cursor's offset in its segment, else the header's end) on. *from ends
 * where reading starts: the good end when the cursor is past it, the
 * header's end when the cursor is not on a record. */
static int scan_segment(disk_queue *q, int fd, segment *s, uint64_t size,
                        uint64_t *from, bool last, char *err, size_t errlen)
{
  uint64_t off = SEG_HEADER, all = 0, after = 0;
  bool on_record = *from == SEG_HEADER;
  uint32_t len;
  int rc = 0;

  while (off < size &&
         (rc = read_record(q, fd, s, off, size, NULL, &len)) == 0) {
    all++;
    if (off >= *from) after++;
    off += REC_HEADER + len;
    on_record |= off == *from;
  }
  if (rc < 0 || (off < size && cut_bad_tail(q, fd, s->seq, off, size, last))) {
    snprintf(err, errlen, "disk queue %s: cannot read or cut segment %" PRIu64
             ": %s", q->dir, s->seq, strerror(errno));
    return -1;
  }
  s->size = off;
  s->nrecs = after;
  if (*from >= off) {
    *from = off;
  } else if (!on_record) {
    log_warning("disk queue %s: its cursor is not on a record of segment %"
            PRIu64 "; reading all of it again", q->dir, s->seq);
    *from = SEG_HEADER;
    s->nrecs = all;
  }
  return 0;
}

/* Scans segment seq into the queue; from is where the cursor puts its
 * first unacknowledged record. The last segment stays open for appends. */
static int add_segment(disk_queue *q, uint64_t seq, uint64_t from, bool last,
                       char *err, size_t errlen)
{
  segment *s;
  uint64_t size;
  int fd, rc;

  if (grow_segs(q) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (open_segment_file(q, seq, &fd, &size, err, errlen) != 0) return -1;
  s = &q->segs[q->nsegs];
  s->seq = seq;
  s->first_id = q->end_id;
  /* Its header was checked (check_headers): this reads its version. */
  if ((rc = check_header(q, seq, fd, size, &s->version, err, errlen)) > 0)
    snprintf(err, errlen, "disk queue %s: segment %" PRIu64 " changed while "
             "the queue opened", q->dir, seq);
  if (rc != 0 || scan_segment(q, fd, s, size, &from, last, err, errlen) != 0) {
    close(fd);
    return -1;
  }
  q->nsegs++;
  q->end_id += s->nrecs;
  q->bytes += s->size;
  if (q->nsegs == 1) q->cursor_off = q->r_off = from;
  /* Appends go to a segment of this format: a version 1 one stays as it
   * is, and the next append starts a new segment. */
  if (!last || s->version != FORMAT_VERSION) {
    close(fd);
  } else if (lseek(fd, (off_t)s->size, SEEK_SET) < 0) {
    snprintf(err, errlen, "disk queue %s: %s", q->dir, strerror(errno));
    close(fd);
    return -1;
  } else {
    q->wfd = fd;
    q->written = s->size;
  }
  return 0;
}

/* ---- opening ---- */

/* A directory just made lasts once its parent is synced. */
static int sync_parent(const char *dir)
{
  char *parent = strdup(dir), *slash;
  size_t len;
  int fd, rc = -1;

  if (!parent) return -1;
  len = strlen(parent);
  while (len > 1 && parent[len - 1] == '/') parent[--len] = '\0';
  slash = strrchr(parent, '/');
  if (!slash) strcpy(parent, ".");
  else slash[slash == parent] = '\0'; /* "/q" has the parent "/" */
  fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    rc = fsync(fd);
    close(fd);
  }
  free(parent);
  return rc;
}

/* Makes dir and the parents it lacks, as mkdir -p does (a disk_buffer
 * below a state_dir that the same start makes later), each new one synced
 * in its parent; 0, or -1 with errno and *what the step that failed. */
static int make_dirs(const char *dir, const char **what)
{
  char *path = strdup(dir);
  int rc = 0;

  if (!path) return -1;
  for (char *p = path + 1; rc == 0; p++) {
    char c = *p;
    if (c != '/' && c != '\0') continue;
    *p = '\0';
    if (mkdir(path, 0700) == 0) {
      *what = "sync the parent of";
      rc = sync_parent(path);
    } else if (errno != EEXIST) {
      *what = "create";
      rc = -1;
    }
    *p = c;
    if (c == '\0') break;
  }
  free(path);
  return rc;
}

static int open_dir(disk_queue *q, char *err, size_t errlen)
{
  const char *what = "create";

  if (make_dirs(q->dir, &what) != 0) goto fail;
  what = "open";
  q->dirfd = open(q->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (q->dirfd >= 0) return 0;
fail:
  snprintf(err, errlen, "disk queue: cannot %s directory %s: %s", what,
           q->dir, strerror(errno));
  return -1;
}

/* One process at a time: a second would append to the same segments and
 * delete those the first still reads. flock, not fcntl: its lock belongs
 * to the open file, so a second dq_open of the directory in this process
 * conflicts too, and closing another descriptor of the file does not drop
 * it. The kernel drops it when the process dies, kill -9 included. */
static int lock_dir(disk_queue *q, char *err, size_t errlen)
{
  q->lockfd = openat(q->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (q->lockfd >= 0 && flock(q->lockfd, LOCK_EX | LOCK_NB) == 0) return 0;
  if (q->lockfd >= 0 && errno == EWOULDBLOCK)
    snprintf(err, errlen, "disk queue %s: another process uses it (%s/lock "
             "is locked)", q->dir, q->dir);
  else
    snprintf(err, errlen, "disk queue %s: cannot lock it: %s", q->dir,
             strerror(errno));
  return -1;
}

static int cmp_seq(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The numbers of the segments in the directory, sorted (*seqs: malloc'd). */
static int list_segments(disk_queue *q, uint64_t **seqs, size_t *n, char *err,
                         size_t errlen)
{
  DIR *d = opendir(q->dir);
  struct dirent *e;
  size_t cap = 0;

  *seqs = NULL;
  *n = 0;
  if (!d) {
    snprintf(err, errlen, "disk queue %s: cannot list it: %s", q->dir,
             strerror(errno));
    return -1;
  }
  while ((e = readdir(d))) {
    uint64_t seq, *grown;
    if (!parse_seg_name(e->d_name, &seq)) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      if (!(grown = realloc(*seqs, cap * sizeof *grown))) {
        closedir(d);
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      *seqs = grown;
    }
    (*seqs)[(*n)++] = seq;
  }
  closedir(d);
  if (*n) qsort(*seqs, *n, sizeof **seqs, cmp_seq);
  return 0;
}

/* The saved cursor; false when there is none, or it cannot be read
 * (logged: then every segment is read again). */
static bool read_cursor(disk_queue *q, uint64_t *seq, uint64_t *off)
{
  char text[160];
  int fd = openat(q->dirfd, "cursor", O_RDONLY | O_CLOEXEC);
  ssize_t n;

  if (fd < 0 && errno == ENOENT) return false;
  n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
  if (fd >= 0) close(fd);
  if (n >= 0) {
    char want[160];
    unsigned check;
    int len;
    text[n] = '\0';
    if (sscanf(text, "lumberjit disk queue cursor 1 segment %" SCNu64
               " offset %" SCNu64, seq, off) == 2 && *off >= SEG_HEADER)
      return true;
    if (sscanf(text, "lumberjit disk queue cursor 2 segment %" SCNu64
               " offset %" SCNu64 " check %x", seq, off, &check) == 3 &&
        *off >= SEG_HEADER &&
        (len = snprintf(want, sizeof want, CURSOR_FORMAT, *seq, *off)) > 0 &&
        check == crc32(crc32(0L, Z_NULL, 0), (const Bytef *)want, (uInt)len))
      return true;
  }
  log_warning("disk queue %s: cannot use its cursor file; reading every segment "
          "again", q->dir);
  return false;
}

/* Deletes the segments the cursor says are acknowledged and scans the
 * others into the queue. */
static int load(disk_queue *q, char *err, size_t errlen)
{
  uint64_t cur_seq = 0, cur_off = SEG_HEADER, *seqs;
  bool have = read_cursor(q, &cur_seq, &cur_off);
  size_t n, first = 0;
  int rc = -1;

  if (list_segments(q, &seqs, &n, err, errlen) != 0) return -1;
  while (have && first < n && seqs[first] < cur_seq)
    remove_segment_file(q, seqs[first++]);
  n -= first;
  /* The segments left; seqs is NULL when there are none (NULL + 0 is
   * undefined behaviour). */
  uint64_t *live = seqs ? seqs + first : NULL;
  if (check_headers(q, live, &n, err, errlen) != 0) goto done;
  for (size_t i = 0; i < n; i++) {
    uint64_t seq = live[i];
    if (add_segment(q, seq, have && seq == cur_seq ? cur_off : SEG_HEADER,
                    i + 1 == n, err, errlen) != 0)
      goto done;
  }
  q->next_seq = (n && live[n - 1] > cur_seq ? live[n - 1] : cur_seq) + 1;
  q->unread = q->end_id;
  rc = 0;
done:
  free(seqs);
  return rc;
}

static void dq_free(disk_queue *q)
{
  if (q->dirfd >= 0) close(q->dirfd);
  if (q->wfd >= 0) close(q->wfd);
  if (q->rfd >= 0) close(q->rfd);
  if (q->lockfd >= 0) close(q->lockfd); /* last: it guards the files */
  free(q->dir);
  free(q->segs);
  free(q->window);
  free(q->ring);
  buf_free(&q->pending);
  free(q);
}

static void release(disk_queue *q);
static void delete_head(disk_queue *q);

int dq_open(disk_queue **out, const char *dir, uint64_t max_bytes,
            uint64_t segment_bytes, char *err, size_t errlen)
{
  disk_queue *q = calloc(1, sizeof *q);

  *out = NULL;
  if (!q) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  q->dirfd = q->lockfd = q->wfd = q->rfd = -1;
  q->max_bytes = max_bytes;
  q->segment_bytes = segment_bytes;
  q->cursor_off = q->r_off = SEG_HEADER;
  q->ring_cap = RING_FIRST;
  q->dir = strdup(dir);
  q->window = malloc(WINDOW_BYTES);
  q->ring = malloc(RING_FIRST * sizeof *q->ring);
  if (!q->dir || !q->window || !q->ring) {
    snprintf(err, errlen, "out of memory");
  } else if (max_bytes < MIN_BYTES || segment_bytes < MIN_BYTES) {
    snprintf(err, errlen, "disk queue %s: max_bytes and segment_bytes must "
             "be at least %d", dir, MIN_BYTES);
  } else if (open_dir(q, err, errlen) == 0 && lock_dir(q, err, errlen) == 0 &&
             load(q, err, errlen) == 0) {
    release(q); /* segments the cursor left with nothing to read */
    *out = q;
    return 0;
  }
  dq_free(q);
  return -1;
}

/* ---- appending ---- */

/* Writes what fd takes of n bytes at p: all of them, or fewer, errno
 * saying why. */
static size_t write_out(int fd, const char *p, size_t n)
{
  size_t done = 0;

  while (done < n) {
    ssize_t w = write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      break;
    }
    done += (size_t)w;
  }
  return done;
}

/* A full disk is worth retrying; anything else is an error. */
static dq_result write_failure(const disk_queue *q, const char *what,
                               uint64_t seq, int e, char *err, size_t errlen)
{
  char name[NAME_LEN];

  seg_name(name, seq);
  snprintf(err, errlen, "disk queue %s: cannot %s %s: %s", q->dir, what, name,
           strerror(e));
  return e == ENOSPC || e == EDQUOT ? DQ_NO_SPACE : DQ_ERROR;
}

/* The bytes of the whole records that begin the n bytes at p. */
static size_t whole_records(const char *p, size_t n)
{
  size_t off = 0;

  while (n - off >= REC_HEADER &&
         (uint32_t)le_get(p + off, 4) <= n - off - REC_HEADER)
    off += REC_HEADER + (uint32_t)le_get(p + off, 4);
  return off;
}

/* Writes the records buffered for the last segment. When the file takes
 * only part of them, the whole records it took stay, the torn one is cut
 * off, and the rest stay buffered for the next try. */
static dq_result flush(disk_queue *q, char *err, size_t errlen)
{
  buf *p = &q->pending;
  size_t done = write_out(q->wfd, p->data, p->len), keep;
  uint64_t seq = q->segs[q->nsegs - 1].seq;
  int e = errno;

  q->unsynced |= done > 0;
  if (done == p->len) {
    q->written += done;
    buf_clear(p);
    return DQ_OK;
  }
  keep = whole_records(p->data, done);
  if (ftruncate(q->wfd, (off_t)(q->written + keep)) != 0 ||
      lseek(q->wfd, (off_t)(q->written + keep), SEEK_SET) < 0) {
    write_failure(q, "cut a torn record off", seq, errno, err, errlen);
    return DQ_ERROR;
  }
  memmove(p->data, p->data + keep, p->len - keep);
  p->len -= keep;
  q->written += keep;
  return write_failure(q, "append to", seq, e, err, errlen);
}

dq_result dq_sync(disk_queue *q, char *err, size_t errlen)
{
  dq_result r;

  if (q->pending.len && (r = flush(q, err, errlen)) != DQ_OK) return r;
  if (!q->unsynced) return DQ_OK;
  if (fdatasync(q->wfd) != 0) {
    /* Not worth retrying: the kernel may have dropped the pages. */
    write_failure(q, "sync", q->segs[q->nsegs - 1].seq, errno, err, errlen);
    return DQ_ERROR;
  }
  q->unsynced = false;
  return DQ_OK;
}

/* Closes the last segment for writing (written and synced, so that
 * dq_sync need not come back to it) and starts the next one. */
static dq_result new_segment(disk_queue *q, char *err, size_t errlen)
{
  unsigned char h[SEG_HEADER];
  char name[NAME_LEN];
  dq_result r;
  int fd, e;

  if (grow_segs(q) != 0) {
    snprintf(err, errlen, "out of memory");
    return DQ_ERROR;
  }
  if (q->wfd >= 0) {
    if ((r = dq_sync(q, err, errlen)) != DQ_OK) return r;
    close(q->wfd);
    q->wfd = -1;
  }
  seg_name(name, q->next_seq);
  make_header(h, FORMAT_VERSION);
  fd = openat(q->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return write_failure(q, "create", q->next_seq, errno, err, errlen);
  if (write_out(fd, (const char *)h, sizeof h) != sizeof h ||
      fsync(q->dirfd) != 0) {
    e = errno;
    close(fd);
    unlinkat(q->dirfd, name, 0);
    return write_failure(q, "create", q->next_seq, e, err, errlen);
  }
  q->segs[q->nsegs++] = (segment){q->next_seq++, FORMAT_VERSION, SEG_HEADER,
                                  q->end_id, 0};
  q->wfd = fd;
  q->written = SEG_HEADER;
  q->unsynced = true;
  q->bytes += SEG_HEADER;
  return DQ_OK;
}

/* ---- dropping the oldest (when_full = "drop_oldest") ---- */

void dq_drop_oldest(disk_queue *q)
{
  q->drop_oldest = true;
}

bool dq_fits(const disk_queue *q, uint64_t bytes)
{
  /* Dropping frees every segment but the one appended to. */
  uint64_t used = q->drop_oldest ? q->segment_bytes : q->bytes;

  return used <= q->max_bytes && bytes <= q->max_bytes - used;
}

static uint64_t now_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The first drop, then a line every DROP_LOG_NS at most with what was
 * dropped since: a full buffer drops a segment every few appends. The
 * records counted include those held in flight, which may yet arrive
 * (dq_stats counts them once they did not). */
static void log_drops(disk_queue *q, uint64_t records)
{
  uint64_t now = now_ns();

  q->dropped_unlogged += records;
  q->segs_unlogged++;
  if (q->drop_logged_ns && now - q->drop_logged_ns < DROP_LOG_NS) return;
  log_warning("disk queue %s: full (max_bytes %" PRIu64 "); dropped the "
              "oldest %" PRIu64 " records (%" PRIu64 " of its files)%s "
              "(when_full = \"drop_oldest\")", q->dir, q->max_bytes,
              q->dropped_unlogged, q->segs_unlogged,
              q->drop_logged_ns ? " since the last such line" : "");
  q->drop_logged_ns = now;
  q->dropped_unlogged = q->segs_unlogged = 0;
}

/* Deletes the oldest segment, however much of it is acknowledged: its
 * unread records are dropped now, those the caller holds once it says
 * what became of them (the top of the file). */
static void drop_head(disk_queue *q)
{
  uint64_t end = q->segs[0].first_id + q->segs[0].nrecs, now = 0, held = 0;

  for (uint64_t id = q->ack_base; id < end; id++) {
    uint32_t e = id < q->max_read ? *ring_at(q, id) : 0;
    if (id < q->max_read && (e & ACKED)) {
      q->acked_ahead--;
    } else if (id < q->next_id) {
      if (!q->held_dropped) q->drop_lo = id;
      q->held_dropped++;
      q->drop_hi = id + 1;
      held++;
    } else {
      now++;
      q->unread--;
    }
  }
  q->dropped += now;
  q->ack_base = end;
  if (q->max_read < end) q->max_read = end;
  if (q->next_id < end) q->next_id = end;
  delete_head(q);
  release(q); /* records after it acknowledged out of order */
  log_drops(q, now + held);
}

/* A dropped record the caller held: settled now, its fate known. */
static bool settle_held(disk_queue *q, uint64_t id, bool dropped)
{
  if (!q->held_dropped || id < q->drop_lo || id >= q->drop_hi) return false;
  q->held_dropped--;
  q->dropped += dropped;
  return true;
}

bool dq_forget_dropped(disk_queue *q, uint64_t id)
{
  return id < q->ack_base && settle_held(q, id, true);
}

/* The held dropped records will not come back (a rewind reads from
 * ack_base on): they count now. */
static void settle_all_held(disk_queue *q)
{
  q->dropped += q->held_dropped;
  q->held_dropped = 0;
}

dq_result dq_append(disk_queue *q, const void *data, size_t len, char *err,
                    size_t errlen)
{
  uint64_t need = REC_HEADER + (uint64_t)len;
  unsigned char h[REC_HEADER];
  segment *s;
  dq_result r;
  bool roll;

  if (len > DQ_RECORD_MAX || SEG_HEADER + need > q->segment_bytes ||
      SEG_HEADER + need > q->max_bytes)
    return DQ_TOO_BIG;
  for (;;) {
    roll = !q->nsegs || q->segs[q->nsegs - 1].version != FORMAT_VERSION ||
           q->segs[q->nsegs - 1].size + need > q->segment_bytes;
    if (q->bytes + need + (roll ? SEG_HEADER : 0) <= q->max_bytes) break;
    if (!q->drop_oldest || q->nsegs < 2) return DQ_FULL;
    drop_head(q);
  }
  if (roll && (r = new_segment(q, err, errlen)) != DQ_OK) return r;
  if (q->pending.len >= WRITE_BYTES && (r = flush(q, err, errlen)) != DQ_OK)
    return r;
  if (!buf_reserve(&q->pending, need)) {
    snprintf(err, errlen, "out of memory");
    return DQ_ERROR;
  }
  le_put(h, len, 4);
  le_put(h + 4, crc32(record_crc_start(FORMAT_VERSION, h), data, (uInt)len),
         4);
  buf_append(&q->pending, h, sizeof h);
  buf_append(&q->pending, data, len);
  s = &q->segs[q->nsegs - 1];
  s->size += need;
  s->nrecs++;
  q->end_id++;
  q->unread++;
  q->bytes += need;
  return DQ_OK;
}

/* ---- reading back ---- */

/* The segment holding record next_id, past segment ends and records
 * acknowledged since a rewind; NULL when nothing is unread. */
static segment *next_unread(disk_queue *q)
{
  while (q->r_idx < q->nsegs) {
    segment *s = &q->segs[q->r_idx];
    uint32_t e;
    if (q->next_id == s->first_id + s->nrecs) {
      if (q->r_idx + 1 == q->nsegs) return NULL;
      q->r_idx++;
      q->r_off = SEG_HEADER;
      continue;
    }
    if (q->next_id == q->max_read || !((e = *ring_at(q, q->next_id)) & ACKED))
      return s;
    q->r_off += REC_HEADER + (e & ~ACKED);
    q->next_id++;
  }
  return NULL;
}

/* Room in the ring for one more id read, doubling it when full. */
static int ring_room(disk_queue *q)
{
  size_t cap = 2 * q->ring_cap;
  uint32_t *r;

  if (q->max_read - q->ack_base < q->ring_cap) return 0;
  if (!(r = malloc(cap * sizeof *r))) return -1;
  for (uint64_t id = q->ack_base; id < q->max_read; id++)
    r[id & (cap - 1)] = *ring_at(q, id);
  free(q->ring);
  q->ring = r;
  q->ring_cap = cap;
  return 0;
}

static int open_reader(disk_queue *q, uint64_t seq)
{
  char name[NAME_LEN];

  if (q->rfd >= 0 && q->rfd_seq == seq) return 0;
  if (q->rfd >= 0) close(q->rfd);
  seg_name(name, seq);
  q->rfd = openat(q->dirfd, name, O_RDONLY | O_CLOEXEC);
  q->rfd_seq = seq;
  return q->rfd < 0 ? -1 : 0;
}

int dq_read(disk_queue *q, buf *into, uint64_t *id, char *err, size_t errlen)
{
  segment *s = next_unread(q);
  uint32_t len;
  int rc;

  if (!s) return 0;
  if (ring_room(q) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  buf_clear(into);
  rc = open_reader(q, s->seq);
  if (rc == 0) rc = read_record(q, q->rfd, s, q->r_off, s->size, into, &len);
  if (rc != 0) {
    snprintf(err, errlen, "disk queue %s: segment %" PRIu64 ", offset %" PRIu64
             ": %s", q->dir, s->seq, q->r_off,
             rc < 0 ? strerror(errno) : "the record is not as it was written "
             "(it changed on disk; reopening the queue cuts it off)");
    return -1;
  }
  if (q->next_id == q->max_read) *ring_at(q, q->max_read++) = len;
  *id = q->next_id++;
  q->r_off += REC_HEADER + len;
  q->unread--;
  return 1;
}

/* ---- acknowledging ---- */

static void delete_head(disk_queue *q)
{
  const segment *s = &q->segs[0];

  if (q->rfd >= 0 && q->rfd_seq == s->seq) {
    close(q->rfd);
    q->rfd = -1;
  }
  if (q->nsegs == 1 && q->wfd >= 0) {
    close(q->wfd);
    q->wfd = -1;
    q->unsynced = false;
    buf_clear(&q->pending); /* read and acknowledged: no need to write */
  }
  remove_segment_file(q, s->seq);
  q->bytes -= s->size;
  memmove(q->segs, q->segs + 1, --q->nsegs * sizeof *q->segs);
  if (q->r_idx > 0) q->r_idx--;
  else q->r_off = SEG_HEADER;
  q->cursor_off = SEG_HEADER;
}

/* Moves the acknowledged prefix over the records acknowledged out of
 * order, deleting every segment it leaves behind. */
static void release(disk_queue *q)
{
  for (;;) {
    uint32_t e;
    if (q->nsegs && q->ack_base == q->segs[0].first_id + q->segs[0].nrecs) {
      delete_head(q);
      continue;
    }
    if (q->ack_base == q->max_read || !((e = *ring_at(q, q->ack_base)) & ACKED))
      break;
    q->cursor_off += REC_HEADER + (e & ~ACKED);
    q->ack_base++;
    q->acked_ahead--;
  }
  /* Rewound records acknowledged before they were read again. */
  if (q->next_id < q->ack_base) {
    q->next_id = q->ack_base;
    q->r_idx = 0;
    q->r_off = q->cursor_off;
  }
}

void dq_ack(disk_queue *q, uint64_t id)
{
  uint32_t *e;

  if (id < q->ack_base) {
    settle_held(q, id, false); /* dropped, and delivered after all */
    return;
  }
  if (id >= q->max_read) return;
  e = ring_at(q, id);
  if (*e & ACKED) return;
  *e |= ACKED;
  q->acked_ahead++;
  if (id >= q->next_id) q->unread--; /* rewound, not read again yet */
  if (id == q->ack_base) release(q);
}

void dq_rewind(disk_queue *q)
{
  settle_all_held(q);
  for (uint64_t id = q->ack_base; id < q->next_id; id++)
    if (!(*ring_at(q, id) & ACKED)) q->unread++;
  q->next_id = q->ack_base;
  q->r_idx = 0;
  q->r_off = q->cursor_off;
}

/* ---- the cursor, stats, closing ---- */

int dq_save_cursor(disk_queue *q, char *err, size_t errlen)
{
  /* Drained: the next segment, from its start. */
  uint64_t seq = q->nsegs ? q->segs[0].seq : q->next_seq;
  uint64_t off = q->nsegs ? q->cursor_off : SEG_HEADER;
  char text[160];
  int n, fd;
  bool ok;

  if (q->saved && seq == q->saved_seq && off == q->saved_off) return 0;
  n = snprintf(text, sizeof text, CURSOR_FORMAT, seq, off);
  n += snprintf(text + n, sizeof text - (size_t)n, "check %08lx\n",
                crc32(crc32(0L, Z_NULL, 0), (const Bytef *)text, (uInt)n));
  fd = openat(q->dirfd, "cursor.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
              0600);
  ok = fd >= 0 && write(fd, text, (size_t)n) == n && fsync(fd) == 0;
  if (fd >= 0 && close(fd) != 0) ok = false;
  if (!ok || renameat(q->dirfd, "cursor.tmp", q->dirfd, "cursor") != 0 ||
      fsync(q->dirfd) != 0) {
    snprintf(err, errlen, "disk queue %s: cannot write its cursor: %s", q->dir,
             strerror(errno));
    return -1;
  }
  q->saved = true;
  q->saved_seq = seq;
  q->saved_off = off;
  return 0;
}

void dq_stats(const disk_queue *q, dq_stats_t *st)
{
  st->bytes = q->bytes;
  st->records = q->end_id - q->ack_base - q->acked_ahead;
  st->unread = q->unread;
  st->segments = q->nsegs;
  st->corrupt_records = q->corrupt_records;
  st->corrupt_bytes = q->corrupt_bytes;
  st->torn_bytes = q->torn_bytes;
  st->dropped = q->dropped;
}

int dq_close(disk_queue *q)
{
  char err[512];
  int rc = 0;

  if (!q) return 0;
  if (dq_sync(q, err, sizeof err) != DQ_OK) {
    log_error("%s", err);
    rc = -1;
  }
  if (dq_save_cursor(q, err, sizeof err) != 0) {
    log_error("%s", err);
    rc = -1;
  }
  dq_free(q);
  return rc;
}
