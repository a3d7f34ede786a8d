/* spool.c - see spool.h. */
#include "spool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "le.h"
#include "log.h"

/* What a record takes on disk besides its bytes and its input's name: the
 * disk queue's length and CRC (8), then our name length, position, flags
 * and head length (15); a segment header (8) is counted for each record,
 * as room to spare for the segments they may open. */
#define PER_RECORD 31
#define NAME_MAX_LEN 65535

/* A record put and not yet durable: its token waits for spool_sync. */
typedef struct {
  spool_origin from;
  void *token;
} unsynced;

struct spool {
  disk_queue *dq;
  char *dir;
  buf put;                  /* a record being laid out for the disk */
  buf front;                /* the front record, read from the disk */
  uint64_t front_id;
  bool has_front;
  unsynced *unsynced;
  size_t nunsynced, unsynced_cap;
  char **names;             /* input names of records read back */
  size_t nnames;
  uint64_t put_count, acked, lost;
};

int spool_open(spool **s, const char *dir, uint64_t max_bytes,
               uint64_t segment_bytes, char *err, size_t errlen)
{
  spool *sp = calloc(1, sizeof *sp);

  *s = NULL;
  if (!sp || !(sp->dir = strdup(dir))) {
    free(sp);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (dq_open(&sp->dq, dir, max_bytes, segment_bytes, err, errlen) != 0) {
    free(sp->dir);
    free(sp);
    return -1;
  }
  *s = sp;
  return 0;
}

static void put_le(buf *b, uint64_t v, int n)
{
  char bytes[8];

  le_put(bytes, v, n);
  buf_append(b, bytes, (size_t)n);
}

dq_result spool_put(spool *s, const spool_origin *from, void *token,
                    const char *bytes, size_t len, char *err, size_t errlen)
{
  size_t name_len = strlen(from->input);
  dq_result res;

  if (s->nunsynced == s->unsynced_cap) {
    size_t cap = s->unsynced_cap ? 2 * s->unsynced_cap : 1024;
    unsynced *u = realloc(s->unsynced, cap * sizeof *u);
    if (!u) {
      snprintf(err, errlen, "out of memory");
      return DQ_FULL;
    }
    s->unsynced = u;
    s->unsynced_cap = cap;
  }
  if (name_len > NAME_MAX_LEN) name_len = NAME_MAX_LEN;
  s->put.len = 0;
  put_le(&s->put, name_len, 2);
  buf_append(&s->put, from->input, name_len);
  put_le(&s->put, from->position, 8);
  put_le(&s->put, from->is_offset, 1);
  put_le(&s->put, from->head, 4);
  if (!buf_append(&s->put, bytes, len)) {
    snprintf(err, errlen, "out of memory");
    return DQ_FULL;
  }
  res = dq_append(s->dq, s->put.data, s->put.len, err, errlen);
  if (res == DQ_OK) s->unsynced[s->nunsynced++] = (unsynced){*from, token};
  return res;
}

bool spool_room(const spool *s, uint64_t records, uint64_t bytes,
                size_t name_max)
{
  return dq_fits(s->dq, bytes + records * (PER_RECORD + name_max));
}

void spool_drop_oldest(spool *s)
{
  dq_drop_oldest(s->dq);
}

size_t spool_unsynced(const spool *s)
{
  return s->nunsynced;
}

dq_result spool_sync(spool *s, spool_settle_fn fn, void *ud, char *err,
                     size_t errlen)
{
  dq_result res;
  size_t n = s->nunsynced;

  if (n == 0) return DQ_OK;
  res = dq_sync(s->dq, err, errlen);
  if (res != DQ_OK) return res;
  /* Emptied first: a callback may put again. */
  s->nunsynced = 0;
  s->put_count += n;
  for (size_t i = 0; i < n; i++)
    fn(ud, &s->unsynced[i].from, s->unsynced[i].token, NULL);
  return DQ_OK;
}

void spool_drop_unsynced(spool *s, const char *reason, spool_settle_fn fn,
                         void *ud)
{
  size_t n = s->nunsynced;

  s->nunsynced = 0;
  for (size_t i = 0; i < n; i++)
    fn(ud, &s->unsynced[i].from, s->unsynced[i].token, reason);
}

/* The input name of a record read back, kept for the spool's life: a dead
 * letter made from it names its input. */
static const char *kept_name(spool *s, const char *name, size_t len)
{
  char **names;

  for (size_t i = 0; i < s->nnames; i++)
    if (strlen(s->names[i]) == len && memcmp(s->names[i], name, len) == 0)
      return s->names[i];
  names = realloc(s->names, (s->nnames + 1) * sizeof *names);
  if (!names) return "(disk buffer)";
  s->names = names;
  if (!(names[s->nnames] = strndup(name, len))) return "(disk buffer)";
  return names[s->nnames++];
}

/* The front buffer's record laid out again; false if it is not one we
 * write. */
static bool unpack(spool *s, spool_origin *from, const char **bytes,
                   size_t *len)
{
  const char *p = s->front.data;
  size_t n = s->front.len, name_len;

  if (n < 2 || n < 2 + (name_len = le_get(p, 2)) + 13) return false;
  from->input = kept_name(s, p + 2, name_len);
  p += 2 + name_len;
  from->position = le_get(p, 8);
  from->is_offset = p[8] & 1;
  from->head = (uint32_t)le_get(p + 9, 4);
  *bytes = p + 13;
  *len = n - 2 - name_len - 13;
  return from->head <= *len;
}

int spool_front(spool *s, spool_origin *from, const char **bytes,
                size_t *len, char *err, size_t errlen)
{
  /* A front record read before its segment was dropped is gone. */
  if (s->has_front && dq_forget_dropped(s->dq, s->front_id))
    s->has_front = false;
  for (;;) {
    if (!s->has_front) {
      int got = dq_read(s->dq, &s->front, &s->front_id, err, errlen);
      if (got <= 0) return got;
      s->has_front = true;
    }
    if (unpack(s, from, bytes, len)) return 1;
    /* Its checksum held, so it was written whole: by something else. */
    log_warning("disk buffer %s: a record is not one lumberjit writes; it "
            "counts as lost", s->dir);
    s->lost++;
    dq_ack(s->dq, s->front_id);
    s->has_front = false;
  }
}

uint64_t spool_next(spool *s)
{
  s->has_front = false;
  return s->front_id;
}

void spool_ack(spool *s, uint64_t id)
{
  s->acked++;
  dq_ack(s->dq, id);
}

void spool_unsent(spool *s, uint64_t id)
{
  dq_forget_dropped(s->dq, id);
}

void spool_rewind(spool *s)
{
  s->has_front = false;
  dq_rewind(s->dq);
}

bool spool_backlog(const spool *s)
{
  dq_stats_t st;

  if (s->has_front) return true;
  dq_stats(s->dq, &st);
  return st.unread > 0;
}

int spool_save(spool *s, char *err, size_t errlen)
{
  return dq_save_cursor(s->dq, err, errlen);
}

void spool_stats(const spool *s, spool_stats_t *st)
{
  dq_stats(s->dq, &st->dq);
  st->put = s->put_count;
  st->acked = s->acked;
  st->lost = s->lost;
}

int spool_close(spool *s)
{
  int rc;

  if (!s) return 0;
  rc = dq_close(s->dq);
  for (size_t i = 0; i < s->nnames; i++) free(s->names[i]);
  free(s->names);
  free(s->unsynced);
  buf_free(&s->put);
  buf_free(&s->front);
  free(s->dir);
  free(s);
  return rc;
}
