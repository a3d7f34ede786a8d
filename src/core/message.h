/*
 * message.h - the event that flows through lumberjit: Heka's message schema
 * in one compact, reusable C representation.
 *
 * A message owns three growable arrays: an arena of bytes (every string and
 * byte value, the field names too), a field table and a value table. Strings
 * are stored as spans (offset, length) into the arena so the arena can grow
 * without invalidating them. msg_reset() empties a message but keeps its
 * memory, so a message that is reused for every event allocates nothing once
 * it has grown to the size of the largest event: the hot path does no malloc.
 *
 * A message belongs to one thread at a time; nothing here is shared.
 */
#ifndef LUMBERJIT_MESSAGE_H
#define LUMBERJIT_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Heka's value types, numbered as in Heka's message.proto. */
typedef enum {
  MSG_STRING = 0,
  MSG_BYTES = 1,
  MSG_INTEGER = 2,
  MSG_DOUBLE = 3,
  MSG_BOOL = 4
} msg_value_type;

/* The header fields, for accessors that take one by name or number. */
typedef enum {
  MSG_H_UUID,
  MSG_H_TIMESTAMP,
  MSG_H_TYPE,
  MSG_H_LOGGER,
  MSG_H_SEVERITY,
  MSG_H_PAYLOAD,
  MSG_H_ENV_VERSION,
  MSG_H_PID,
  MSG_H_HOSTNAME,
  MSG_H_COUNT
} msg_header;

typedef struct {
  uint32_t off;
  uint32_t len;
} msg_span;

typedef union {
  msg_span s;  /* MSG_STRING, MSG_BYTES */
  int64_t i;   /* MSG_INTEGER */
  double d;    /* MSG_DOUBLE */
  bool b;      /* MSG_BOOL */
} msg_value;

typedef struct {
  msg_span name;
  msg_span representation;
  msg_value_type type;
  uint32_t first; /* index of the first value in msg->values */
  uint32_t count; /* 1 for a scalar, the array length otherwise */
} msg_field;

/* Where the event came from: kept with every message so that the original
 * bytes can go to the dead-letter path from any later stage. */
typedef struct {
  const char *input;   /* input plugin name */
  uint64_t position;   /* file offset or sequence number */
  bool is_offset;      /* position is a byte offset, not a sequence number */
  const char *bytes;   /* the raw record, owned by the input */
  size_t len;
  struct checkpoint_ticket *ack; /* what its outputs acknowledge, or NULL */
  const char *file;    /* the file read, for an input that reads many
                          (tail_input); NULL otherwise */
  const char *from;    /* the sender's address (syslog_input), or NULL */
  uint64_t read_us;    /* when its input handed it on (uv_hrtime, in us),
                          for the latency to its output's acknowledgement;
                          0: not known */
} msg_origin;

typedef struct msg {
  /* Header. A string header that was never set has len 0; numeric headers
   * carry a has_ flag since 0 is a real severity and a real pid. */
  uint8_t uuid[16];
  bool has_uuid;
  int64_t timestamp; /* nanoseconds since the Unix epoch, UTC */
  int32_t severity;
  bool has_severity;
  int32_t pid;
  bool has_pid;
  msg_span type, logger, payload, env_version, hostname;

  msg_field *fields;
  uint32_t nfields, fields_cap;
  msg_value *values;
  uint32_t nvalues, values_cap;
  char *arena;
  uint32_t arena_len, arena_cap;

  msg_origin origin;
} msg;

/* The wall clock in a timestamp's unit: what stamps a message that came
 * without a time. */
static inline int64_t msg_now_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void msg_init(msg *m);
void msg_free(msg *m);
/* Empties the message, keeping its memory for the next event. */
void msg_reset(msg *m);

/* Copies bytes into the arena; returns false only when memory is exhausted
 * or the message would exceed 4 GiB. Inline: a decoder's message stores a
 * dozen short strings, mostly into room the arena has; msg_store_growing
 * is its way once the arena is full. */
bool msg_store_growing(msg *m, const void *bytes, size_t len, msg_span *out);
static inline bool msg_store(msg *m, const void *bytes, size_t len,
                             msg_span *out)
{
  if (len > (size_t)(m->arena_cap - m->arena_len))
    return msg_store_growing(m, bytes, len, out);
  if (len) memcpy(m->arena + m->arena_len, bytes, len);
  out->off = m->arena_len;
  out->len = (uint32_t)len;
  m->arena_len += (uint32_t)len;
  return true;
}

/* A span's bytes. A message that stored no byte yet has an empty arena,
 * never NULL (msg_init), so an empty span of it (a field named "") is ""
 * without a test here, on the hottest path of the encoders. */
static inline const char *msg_str(const msg *m, msg_span s)
{
  return m->arena + s.off;
}

/* Appends a field with `count` zeroed values of `type`; returns it, or NULL
 * when memory is exhausted. The caller fills msg_field_values(). */
msg_field *msg_add_field_growing(msg *m, const char *name, size_t name_len,
                                 msg_value_type type, uint32_t count);
/* Inline where the tables have room, which after the first messages they
 * have: a decoder adds a handful of fields to every message. */
static inline msg_field *msg_add_field(msg *m, const char *name, size_t name_len,
                                       msg_value_type type, uint32_t count)
{
  msg_field *f;
  msg_span sname;

  if (count != 1 || m->nfields >= m->fields_cap || m->nvalues >= m->values_cap)
    return msg_add_field_growing(m, name, name_len, type, count);
  if (!msg_store(m, name, name_len, &sname)) return NULL;
  f = &m->fields[m->nfields++];
  *f = (msg_field){.name = sname, .type = type, .first = m->nvalues, .count = 1};
  m->values[m->nvalues++] = (msg_value){.i = 0};
  return f;
}

static inline msg_value *msg_field_values(const msg *m, const msg_field *f)
{
  return m->values + f->first;
}

/* The fi-th field (0-based) named `name`, or NULL. */
const msg_field *msg_find_field(const msg *m, const char *name,
                                size_t name_len, unsigned fi);

/* The order of field names: by bytes, then by length (a prefix first). */
static inline bool msg_name_before(const char *a, size_t alen, const char *b,
                                   size_t blen)
{
  size_t n = alen < blen ? alen : blen;
  int c = n == 0 ? 0 : (unsigned char)a[0] != (unsigned char)b[0]
                         ? (unsigned char)a[0] - (unsigned char)b[0]
                         : memcmp(a, b, n);

  return c < 0 || (c == 0 && alen < blen);
}

/* Sorts the fields from `from` on by name (msg_name_before), keeping
 * the order of equal names: a Lua table's order is its hash layout's, which
 * LuaJIT seeds anew for each state, so the sandbox sorts what a table gave
 * for encoders to write the same record the same way every run. */
void msg_sort_fields(msg *m, uint32_t from);

/* The span of a string header (Type, Logger, Payload, EnvVersion,
 * Hostname); NULL for the others. */
msg_span *msg_header_span(msg *m, msg_header h);

/* Header names as Heka spells them ("Timestamp", "Payload", ...);
 * msg_header_by_name returns MSG_H_COUNT for an unknown name. */
const char *msg_header_name(msg_header h);
msg_header msg_header_by_name(const char *name, size_t len);
/* The one header a name of this length and first letter could be (without
 * comparing the rest), or MSG_H_COUNT. */
msg_header msg_header_candidate(const char *name, size_t len);

/* A reusable list of messages: what one decoder call produced. Messages
 * past `len` keep their memory for the next call. */
typedef struct {
  msg *msgs;
  uint32_t len, cap;
} msg_batch;

/* Moves a finished message into the batch: *m takes the memory of the slot
 * it fills, emptied, for the next message. False when memory is exhausted.
 * Building a message apart and pushing it once whole means a failure
 * halfway leaves the batch as it was. */
bool msg_batch_push(msg_batch *b, msg *m);
static inline void msg_batch_clear(msg_batch *b) { b->len = 0; }
/* Frees the memory of all but `keep` slots past len: one call that made
 * many messages does not hold their memory for ever. */
void msg_batch_trim(msg_batch *b, uint32_t keep);
void msg_batch_free(msg_batch *b);

#endif
