/*
 * test_message.c - the compact message: arena spans survive growth, fields
 * and arrays keep their values, reset keeps memory, batches reuse messages.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "message.h"

static bool span_is(const msg *m, msg_span s, const char *text)
{
  return s.len == strlen(text) && memcmp(msg_str(m, s), text, s.len) == 0;
}

static void test_spans_survive_growth(void)
{
  msg m;
  msg_span first, big;
  char *blob = malloc(1 << 20);

  msg_init(&m);
  CHECK(msg_store(&m, "first", 5, &first));
  memset(blob, 'b', 1 << 20);
  CHECK(msg_store(&m, blob, 1 << 20, &big));
  CHECK(span_is(&m, first, "first"));
  CHECK(big.len == 1u << 20 && msg_str(&m, big)[12345] == 'b');
  free(blob);
  msg_free(&m);
}

static void test_fields(void)
{
  msg m;
  msg_field *f;
  const msg_field *found;

  msg_init(&m);
  f = msg_add_field(&m, "tags", 4, MSG_STRING, 3);
  CHECK(f != NULL && f->count == 3);
  msg_store(&m, "a", 1, &msg_field_values(&m, f)[0].s);
  msg_store(&m, "bb", 2, &msg_field_values(&m, &m.fields[0])[1].s);
  msg_store(&m, "ccc", 3, &msg_field_values(&m, &m.fields[0])[2].s);
  f = msg_add_field(&m, "n", 1, MSG_INTEGER, 1);
  msg_field_values(&m, f)->i = -42;
  f = msg_add_field(&m, "tags", 4, MSG_BOOL, 1);
  msg_field_values(&m, f)->b = true;
  for (int i = 0; i < 100; i++) { /* force the tables to grow */
    f = msg_add_field(&m, "x", 1, MSG_DOUBLE, 1);
    msg_field_values(&m, f)->d = i;
  }

  found = msg_find_field(&m, "tags", 4, 0);
  CHECK(found && found->type == MSG_STRING && found->count == 3);
  CHECK(span_is(&m, msg_field_values(&m, found)[2].s, "ccc"));
  CHECK(span_is(&m, found->name, "tags"));
  found = msg_find_field(&m, "tags", 4, 1);
  CHECK(found && found->type == MSG_BOOL && msg_field_values(&m, found)->b);
  CHECK(msg_find_field(&m, "tags", 4, 2) == NULL);
  found = msg_find_field(&m, "n", 1, 0);
  CHECK(found && msg_field_values(&m, found)->i == -42);
  found = msg_find_field(&m, "x", 1, 99);
  CHECK(found && msg_field_values(&m, found)->d == 99);
  CHECK(msg_find_field(&m, "nope", 4, 0) == NULL);
  msg_free(&m);
}

static void test_reset_keeps_memory(void)
{
  msg m;
  msg_span s;
  char *arena;

  msg_init(&m);
  msg_store(&m, "payload", 7, &m.payload);
  m.has_severity = true;
  msg_add_field(&m, "f", 1, MSG_BOOL, 1);
  arena = m.arena;
  msg_reset(&m);
  CHECK(m.arena == arena && m.arena_cap > 0);
  CHECK(m.nfields == 0 && m.nvalues == 0 && m.arena_len == 0);
  CHECK(!m.has_severity && m.payload.len == 0);
  msg_store(&m, "again", 5, &s);
  CHECK(m.arena == arena && span_is(&m, s, "again"));
  msg_free(&m);
}

static void test_headers_by_name(void)
{
  for (int h = 0; h < MSG_H_COUNT; h++) {
    const char *name = msg_header_name((msg_header)h);
    CHECK(msg_header_by_name(name, strlen(name)) == (msg_header)h);
  }
  CHECK(msg_header_by_name("Fields", 6) == MSG_H_COUNT);
  CHECK(msg_header_by_name("type", 4) == MSG_H_COUNT);
  CHECK(msg_header_by_name("Typo", 4) == MSG_H_COUNT);
  CHECK(msg_header_by_name("", 0) == MSG_H_COUNT);
}

/* A cleared batch's slots keep their memory: the next push hands the
 * slot's arena to the message being built. */
static void test_batch_reuse(void)
{
  msg_batch b = {0};
  msg m;
  char *arena;

  msg_init(&m);
  for (int i = 0; i < 20; i++) {
    msg_store(&m, "x", 1, &m.payload);
    CHECK(msg_batch_push(&b, &m));
  }
  CHECK(b.len == 20 && b.cap >= 20);
  arena = b.msgs[0].arena;
  msg_batch_clear(&b);
  CHECK(msg_batch_push(&b, &m));
  CHECK(m.arena == arena && m.payload.len == 0);
  msg_batch_free(&b);
  msg_free(&m);
  CHECK(b.msgs == NULL && b.cap == 0);
}

/* push moves a whole message in and hands back the slot's memory; trim
 * lets go of what a burst of messages left behind. */
static void test_batch_push_and_trim(void)
{
  msg_batch b = {0};
  msg m;

  msg_init(&m);
  for (int i = 0; i < 300; i++) {
    msg_store(&m, "payload", 7, &m.payload);
    CHECK(msg_batch_push(&b, &m));
    CHECK(m.payload.len == 0); /* emptied for the next one */
  }
  CHECK(b.len == 300 && b.msgs[299].payload.len == 7);
  CHECK(strncmp(msg_str(&b.msgs[299], b.msgs[299].payload), "payload", 7) == 0);
  msg_batch_clear(&b);
  CHECK(msg_batch_push(&b, &m));
  msg_batch_trim(&b, 8);
  CHECK(b.cap == 9 && b.len == 1);
  msg_batch_trim(&b, 64); /* never grows */
  CHECK(b.cap == 9);
  msg_batch_free(&b);
  msg_free(&m);
}

int main(void)
{
  test_spans_survive_growth();
  test_fields();
  test_reset_keeps_memory();
  test_headers_by_name();
  test_batch_reuse();
  test_batch_push_and_trim();
  return check_summary();
}
