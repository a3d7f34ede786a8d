/*
 * test_sandbox_filter.c - filter sandboxes (sandbox_filter_many,
 * sandbox_timer_event): a filter reads each message and injects what
 * replaces it, with the message's origin; a rejection or a failure leaves
 * nothing of its item; timer_event injects with the origin it is given;
 * state lives across calls and is lost on a rebuild.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sandbox.h"

static char dir[] = "/tmp/lumberjit-test-filter-XXXXXX";

static sandbox *make(const char *name, const char *src)
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
  cfg.kind = SANDBOX_FILTER;
  sandbox_limits_default(&cfg.limits);
  sb = sandbox_create(&cfg, NULL, err, sizeof err);
  if (!sb) fprintf(stderr, "cannot create %s: %s\n", name, err);
  return sb;
}

static void payload(msg *m, const char *text, uint64_t position)
{
  msg_init(m);
  msg_store(m, text, strlen(text), &m->payload);
  m->origin = (msg_origin){.input = "in", .position = position};
}

static bool is(const msg *m, const char *text)
{
  return m->payload.len == strlen(text) &&
         memcmp(msg_str(m, m->payload), text, m->payload.len) == 0;
}

typedef struct {
  size_t n;
  sandbox_status status[8];
  uint32_t len[8];
  msg_batch *out;
} seen;

static void on_end(void *ud, size_t i, const sandbox_result *res)
{
  seen *s = ud;

  (void)i;
  s->status[s->n] = res->status;
  s->len[s->n++] = s->out->len;
}

/* Drop "noise", split on commas, keep the rest: inline's three cases. */
static void test_replaces(void)
{
  sandbox *sb = make("split.lua",
    "function process_message()\n"
    "  local p = read_message('Payload')\n"
    "  if p == 'noise' then return 0 end\n"
    "  if p == 'bad' then return -1, 'bad payload' end\n"
    "  for part in p:gmatch('[^,]+') do inject_message({Payload = part}) end\n"
    "  return 0\n"
    "end\n");
  msg in[4];
  const msg *ptrs[4];
  msg_batch out = {0};
  seen s = {.out = &out};
  sandbox_each each = {NULL, on_end, &s};
  const char *texts[] = {"a,b", "noise", "bad", "c"};

  CHECK(sb != NULL);
  if (!sb) return;
  for (int i = 0; i < 4; i++) {
    payload(&in[i], texts[i], (uint64_t)i + 1);
    ptrs[i] = &in[i];
  }
  sandbox_filter_many(sb, ptrs, 4, &out, &each);
  CHECK(s.n == 4);
  CHECK(s.status[0] == SANDBOX_OK && s.len[0] == 2);
  CHECK(s.status[1] == SANDBOX_OK && s.len[1] == 2);   /* dropped */
  CHECK(s.status[2] == SANDBOX_REJECTED && s.len[2] == 2);
  CHECK(s.status[3] == SANDBOX_OK && s.len[3] == 3);
  CHECK(out.len == 3 && is(&out.msgs[0], "a") && is(&out.msgs[1], "b") &&
        is(&out.msgs[2], "c"));
  /* Each keeps the origin of the message it was made for. */
  CHECK(out.msgs[1].origin.position == 1 && out.msgs[2].origin.position == 4);
  for (int i = 0; i < 4; i++) msg_free(&in[i]);
  msg_batch_free(&out);
  sandbox_destroy(sb);
}

/* State lives across calls; timer_event sees it and injects with the
 * origin given; a failure rebuilds the state, losing it. */
static void test_timer(void)
{
  sandbox *sb = make("count.lua",
    "local n = 0\n"
    "function process_message()\n"
    "  if read_message('Payload') == 'boom' then error('boom') end\n"
    "  n = n + 1\n"
    "  return 0\n"
    "end\n"
    "function timer_event(ns)\n"
    "  inject_message({Payload = tostring(n), Timestamp = ns})\n"
    "end\n");
  msg m[3];
  const msg *ptrs[3];
  msg_batch out = {0};
  seen s = {.out = &out};
  sandbox_each each = {NULL, on_end, &s};
  msg_origin tick = {.input = "count.lua"};
  sandbox_result res;

  CHECK(sb != NULL);
  if (!sb) return;
  CHECK(sandbox_has_timer(sb));
  payload(&m[0], "x", 1);
  payload(&m[1], "y", 2);
  ptrs[0] = &m[0];
  ptrs[1] = &m[1];
  sandbox_filter_many(sb, ptrs, 2, &out, &each);
  CHECK(out.len == 0);
  sandbox_timer_event(sb, 5000, false, &tick, &out, &res);
  CHECK(res.status == SANDBOX_OK && out.len == 1 && is(&out.msgs[0], "2"));
  CHECK(out.msgs[0].timestamp == 5000);
  CHECK(strcmp(out.msgs[0].origin.input, "count.lua") == 0);
  payload(&m[2], "boom", 3);
  ptrs[0] = &m[2];
  sandbox_filter_many(sb, ptrs, 1, &out, &each);
  CHECK(s.status[s.n - 1] == SANDBOX_FAILED);
  sandbox_timer_event(sb, 6000, true, &tick, &out, &res);
  CHECK(out.len == 2 && is(&out.msgs[1], "0")); /* rebuilt: n is 0 again */
  for (int i = 0; i < 3; i++) msg_free(&m[i]);
  msg_batch_free(&out);
  sandbox_destroy(sb);
}

/* A failing timer_event leaves nothing it injected. */
static void test_timer_failure(void)
{
  sandbox *sb = make("tick_fail.lua",
    "function process_message() return 0 end\n"
    "function timer_event(ns)\n"
    "  inject_message({Payload = 'half'})\n"
    "  error('no')\n"
    "end\n");
  msg_batch out = {0};
  msg_origin tick = {.input = "tick_fail.lua"};
  sandbox_result res;

  CHECK(sb != NULL);
  if (!sb) return;
  sandbox_timer_event(sb, 1, false, &tick, &out, &res);
  CHECK(res.status == SANDBOX_FAILED && out.len == 0);
  CHECK(strstr(res.reason, "no") != NULL);
  msg_batch_free(&out);
  sandbox_destroy(sb);
}

int main(void)
{
  char cmd[600];

  if (!mkdtemp(dir)) return 1;
  test_replaces();
  test_timer();
  test_timer_failure();
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
