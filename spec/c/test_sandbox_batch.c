/*
 * test_sandbox_batch.c - batches through one plugin (sandbox_decode_many,
 * sandbox_encode_many): each item is a call of its own for the results,
 * the limits and the failures, whatever else is in its batch.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sandbox.h"

static char dir[] = "/tmp/lumberjit-test-batch-XXXXXX";
static sandbox_watchdog *wd;
static int log_lines;

static void on_log(void *ud, const char *line)
{
  (void)ud;
  (void)line;
  log_lines++;
}

/* Writes the plugin into dir, where it stays for rebuilds: destroy()
 * removes it. */
static sandbox *make(sandbox_kind kind, const char *name, const char *src,
                     const sandbox_limits *limits)
{
  char path[512], err[512];
  sandbox_config cfg = {0};
  sandbox *sb;
  FILE *f;

  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "w");
  fputs(src, f);
  fclose(f);
  cfg.name = name;
  cfg.filename = path;
  cfg.kind = kind;
  if (limits) cfg.limits = *limits;
  else sandbox_limits_default(&cfg.limits);
  cfg.log = on_log;
  sb = sandbox_create(&cfg, wd, err, sizeof err);
  if (!sb) fprintf(stderr, "cannot create %s: %s\n", name, err);
  return sb;
}

/* What the callbacks saw, item by item. */
#define MAX_ITEMS 16
typedef struct {
  size_t n;                    /* ends seen */
  size_t index[MAX_ITEMS];     /* the item each end was for */
  sandbox_result res[MAX_ITEMS];
  uint32_t msgs[MAX_ITEMS];    /* decoder: messages in the batch at its end */
  size_t bytes[MAX_ITEMS];     /* encoder: bytes in the buffer at its end */
  size_t leave_out;            /* begin says false for this item */
  msg_batch *batch;
  buf *out;
} seen;

static void destroy(sandbox *sb, const char *name)
{
  char path[512];

  sandbox_destroy(sb);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  unlink(path);
}

static bool on_begin(void *ud, size_t i)
{
  return ((seen *)ud)->leave_out != i;
}

static void on_end(void *ud, size_t i, const sandbox_result *res)
{
  seen *s = ud;

  if (s->n >= MAX_ITEMS) return;
  s->index[s->n] = i;
  s->res[s->n] = *res;
  s->msgs[s->n] = s->batch ? s->batch->len : 0;
  s->bytes[s->n] = s->out ? s->out->len : 0;
  s->n++;
}

static void decode_all(sandbox *sb, const char *const *lines, size_t n,
                       msg_batch *batch, seen *s)
{
  msg_origin recs[MAX_ITEMS];
  sandbox_each each = {NULL, on_end, s};

  memset(s, 0, sizeof *s);
  s->leave_out = SIZE_MAX;
  s->batch = batch;
  for (size_t i = 0; i < n; i++)
    recs[i] = (msg_origin){.input = "batch", .position = i, .bytes = lines[i],
                           .len = strlen(lines[i])};
  msg_batch_clear(batch);
  sandbox_decode_many(sb, recs, n, batch, &each);
}

static const char *payload(const msg_batch *b, uint32_t i)
{
  static char text[256];
  const msg *m = &b->msgs[i];

  snprintf(text, sizeof text, "%.*s", (int)m->payload.len,
           msg_str(m, m->payload));
  return text;
}

/* Records of every kind in one batch: each has its own result, its own
 * messages and its own origin; a failure rebuilds the state and the records
 * after it go on. */
static void test_decode_results(void)
{
  static const char *const lines[] = {
    "two a b", "reject", "one c", "error", "one d", "caught", "one e",
    "0123456789", "one f"};
  sandbox_limits limits;
  msg_batch batch = {0};
  seen s;
  sandbox *sb;

  sandbox_limits_default(&limits);
  limits.input_limit = 9;
  sb = make(SANDBOX_DECODER, "results.lua",
    "local at_load = {}\n"
    "function process_record(length)\n"
    "  local text = record_text()\n"
    "  if text == 'reject' then return -1, 'not this one' end\n"
    "  if text == 'error' then error('boom') end\n"
    "  if text == 'caught' then\n"
    "    pcall(function() local t = {} for i = 1, 1e7 do t[i] = i end end)\n"
    "  end\n"
    "  for word in text:gmatch('%a+') do inject_message({Payload = word}) end\n"
    "  at_load[#at_load + 1] = text\n"
    "  inject_message({Payload = #at_load .. ''})\n"
    "end\n", &limits);
  CHECK(sb != NULL);
  if (!sb) return;
  log_lines = 0;
  decode_all(sb, lines, 9, &batch, &s);
  CHECK(s.n == 9);
  for (size_t i = 0; i < s.n; i++) CHECK(s.index[i] == i);
  /* "two a b": its words (and "two") and its count; each record's
   * messages are the batch's last at its end. */
  CHECK(s.res[0].status == SANDBOX_OK && s.msgs[0] == 4);
  CHECK(strcmp(payload(&batch, 0), "two") == 0);
  CHECK(strcmp(payload(&batch, 3), "1") == 0);
  CHECK(batch.msgs[3].origin.position == 0);
  CHECK(s.res[1].status == SANDBOX_REJECTED && s.msgs[1] == 4);
  CHECK_CONTAINS(s.res[1].reason, "rejected by results.lua: not this one");
  CHECK(s.res[2].status == SANDBOX_OK && s.msgs[2] == 7);
  CHECK(batch.msgs[6].origin.position == 2);
  CHECK(strcmp(payload(&batch, 6), "2") == 0);
  CHECK(s.res[3].status == SANDBOX_FAILED && s.msgs[3] == 7);
  CHECK_CONTAINS(s.res[3].reason, "boom");
  /* After the rebuild: a new state, counting from 1 again. */
  CHECK(s.res[4].status == SANDBOX_OK && s.msgs[4] == 10);
  CHECK(strcmp(payload(&batch, 9), "1") == 0);
  CHECK(batch.msgs[9].origin.position == 4);
  /* A refused allocation the script caught fails its record. */
  CHECK(s.res[5].status == SANDBOX_FAILED && s.res[5].limit == SANDBOX_LIMIT_MEMORY);
  CHECK(s.msgs[5] == 10);
  CHECK(s.res[6].status == SANDBOX_OK && s.msgs[6] == 13);
  CHECK(s.res[7].status == SANDBOX_REJECTED && s.res[7].limit == SANDBOX_LIMIT_INPUT);
  CHECK(s.res[8].status == SANDBOX_OK && s.msgs[8] == 16);
  CHECK(strcmp(payload(&batch, 15), "2") == 0);
  CHECK(log_lines == 2); /* the two rebuilds */
  msg_batch_free(&batch);
  destroy(sb, "results.lua");
}

/* The output limit counts each record's output alone: a batch emits far
 * more than the limit, record by record within it. */
static void test_limits_per_item(void)
{
  static const char *const lines[] = {"a", "b", "c", "d", "e", "f", "g", "h",
                                      "over"};
  sandbox_limits limits;
  msg_batch batch = {0};
  seen s;
  sandbox *sb;

  sandbox_limits_default(&limits);
  limits.output_limit = 2000;
  sb = make(SANDBOX_DECODER, "per_item.lua",
    "local big = string.rep('x', 1000)\n"
    "function process_message(record)\n"
    "  inject_message({Payload = big})\n"
    "  if record == 'over' then inject_message({Payload = big}) end\n"
    "  return 0\n"
    "end\n", &limits);
  CHECK(sb != NULL);
  if (!sb) return;
  decode_all(sb, lines, 9, &batch, &s);
  CHECK(s.n == 9);
  for (size_t i = 0; i < 8; i++) CHECK(s.res[i].status == SANDBOX_OK);
  CHECK(s.res[8].status == SANDBOX_FAILED && s.res[8].limit == SANDBOX_LIMIT_OUTPUT);
  CHECK(batch.len == 8);
  msg_batch_free(&batch);
  destroy(sb, "per_item.lua");
}

/* A plugin that stops partway: the records after get its stop, not a run. */
static void test_stop_in_batch(void)
{
  static const char *const lines[] = {"ok", "bad", "bad", "ok", "ok"};
  sandbox_limits limits;
  msg_batch batch = {0};
  seen s;
  sandbox *sb;

  sandbox_limits_default(&limits);
  limits.max_failures = 2;
  limits.restart_after_ms = 60000;
  sb = make(SANDBOX_DECODER, "stops.lua",
    "function process_message(record)\n"
    "  if record == 'bad' then error('bad record') end\n"
    "  inject_message({Payload = record})\n"
    "end\n", &limits);
  CHECK(sb != NULL);
  if (!sb) return;
  decode_all(sb, lines, 5, &batch, &s);
  CHECK(s.n == 5);
  CHECK(s.res[0].status == SANDBOX_OK);
  CHECK(s.res[1].status == SANDBOX_FAILED && s.res[2].status == SANDBOX_FAILED);
  CHECK(s.res[3].status == SANDBOX_STOPPED && s.res[4].status == SANDBOX_STOPPED);
  CHECK_CONTAINS(s.res[4].reason, "is stopped after failing");
  CHECK(batch.len == 1);
  CHECK(sandbox_is_stopped(sb));
  msg_batch_free(&batch);
  destroy(sb, "stops.lua");
}

/* An encoder's batch: returned strings, written JSON, skips, rejections,
 * bad results and an item left out by begin, each with its own bytes. */
static void test_encode_results(void)
{
  enum { N = 7 };
  static const char *const payloads[N] = {
    "string", "json", "skip", "reject", "table", "left out", "string"};
  msg msgs[N];
  const msg *ptrs[N];
  buf out = {0};
  seen s;
  sandbox_each each = {on_begin, on_end, &s};
  sandbox *sb = make(SANDBOX_ENCODER, "encode.lua",
    "function process_message()\n"
    "  local p = read_message('Payload')\n"
    "  if p == 'string' then return '<' .. p .. '>' end\n"
    "  if p == 'json' then inject_message_json() return 0 end\n"
    "  if p == 'skip' then inject_payload('', '', 'gone') return -2 end\n"
    "  if p == 'reject' then inject_payload('', '', 'gone') return -1, 'no' end\n"
    "  return {}\n"
    "end\n", NULL);

  CHECK(sb != NULL);
  if (!sb) return;
  for (size_t i = 0; i < N; i++) {
    msg_init(&msgs[i]);
    msg_store(&msgs[i], payloads[i], strlen(payloads[i]), &msgs[i].payload);
    msgs[i].timestamp = 0;
    ptrs[i] = &msgs[i];
  }
  memset(&s, 0, sizeof s);
  s.leave_out = 5;
  s.out = &out;
  sandbox_encode_many(sb, ptrs, N, &out, &each);
  CHECK(s.n == 6);
  CHECK(s.index[4] == 4 && s.index[5] == 6);
  CHECK(s.res[0].status == SANDBOX_OK && s.bytes[0] == 8);
  CHECK(s.res[1].status == SANDBOX_OK);
  CHECK(s.bytes[1] > 8 && memcmp(out.data + 8, "{\"@timestamp\":", 14) == 0);
  CHECK(s.res[2].status == SANDBOX_SKIPPED && s.bytes[2] == s.bytes[1]);
  CHECK(s.res[3].status == SANDBOX_REJECTED && s.bytes[3] == s.bytes[1]);
  CHECK_CONTAINS(s.res[3].reason, "no");
  CHECK(s.res[4].status == SANDBOX_REJECTED && s.bytes[4] == s.bytes[1]);
  CHECK_CONTAINS(s.res[4].reason, "returned a table");
  CHECK(s.res[5].status == SANDBOX_OK && s.bytes[5] == s.bytes[1] + 8);
  CHECK(memcmp(out.data + s.bytes[1], "<string>", 8) == 0);
  for (size_t i = 0; i < N; i++) msg_free(&msgs[i]);
  buf_free(&out);
  destroy(sb, "encode.lua");
}

/* A writer of the encoder API (inject_message_json, inject_message_value)
 * past the output limit fails its message, with the plugin's line as
 * where, even when the script catches the error. */
static void test_output_limit(const char *call)
{
  char src[256];
  sandbox_limits limits;
  msg m;
  buf out = {0};
  sandbox_result res;
  sandbox *sb;

  sandbox_limits_default(&limits);
  limits.output_limit = 100;
  snprintf(src, sizeof src, "function process_message()\n"
                            "  pcall(%s)\n"
                            "  return 0\n"
                            "end\n", call);
  sb = make(SANDBOX_ENCODER, "writer_limit.lua", src, &limits);
  CHECK(sb != NULL);
  if (!sb) return;
  msg_init(&m);
  msg_store(&m, "short", 5, &m.payload);
  sandbox_encode(sb, &m, &out, &res);
  CHECK(res.status == SANDBOX_OK && out.len > 0);
  buf_clear(&out);
  msg_reset(&m);
  {
    char big[200];
    memset(big, 'y', sizeof big);
    msg_store(&m, big, sizeof big, &m.payload);
  }
  sandbox_encode(sb, &m, &out, &res);
  CHECK(res.status == SANDBOX_FAILED && res.limit == SANDBOX_LIMIT_OUTPUT);
  CHECK(out.len == 0);
  CHECK_CONTAINS(res.reason, "writer_limit.lua:2");
  msg_free(&m);
  buf_free(&out);
  destroy(sb, "writer_limit.lua");
}

int main(void)
{
  char err[256];

  if (!mkdtemp(dir)) return 2;
  wd = sandbox_watchdog_start(1, err, sizeof err);
  if (!wd) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  test_decode_results();
  test_limits_per_item();
  test_stop_in_batch();
  test_encode_results();
  test_output_limit("inject_message_json");
  test_output_limit("inject_message_value, 'Payload'");
  sandbox_watchdog_stop(wd);
  rmdir(dir);
  return check_summary();
}
