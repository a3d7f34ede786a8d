/*
 * sandbox_host.c - runs plugins in the real sandbox for the busted specs
 * (spec/modules/sandbox_host.lua drives it), so the specs test the runtime
 * lumberjit runs, not an imitation of it.
 *
 *   sandbox_host DECODER SETTINGS [ENCODER SETTINGS]
 *   sandbox_host DECODER SETTINGS --filter FILTER SETTINGS
 *
 * SETTINGS is the Lua source of the table read_config reads ("return {...}").
 * Each plugin gets the default limits, as a config without limits gives
 * them, and lua_modules/ as its modules. As in `lumberjit --try --encode`,
 * every record goes to the decoder and every message it makes to the
 * encoder. One process serves many records: standard input holds requests,
 *
 *   RECORD_LEN [ORIGIN_LEN]\n RECORD ORIGIN
 *
 * where ORIGIN, when given, becomes the messages' original record (what an
 * encoder reads as "raw") in place of RECORD, and an empty one none: the
 * specs hand an encoder a message through a decoder that makes it of its
 * Lua source (message_feeder.lua), and that source is no record of it.
 * For each request, standard output gets:
 *
 *   ok N\n                then N times: "message\n", the message as
 *                         message_text writes it (lines that start with two
 *                         spaces), and with an encoder one of
 *                         "encoded LEN\n" LEN bytes "\n", "skipped\n",
 *                         "rejected REASON\n", "failed REASON\n"
 *   rejected REASON\n     or
 *   failed REASON\n
 *   end\n
 *
 * With a filter, each message goes to the filter (a batch of one, as
 * sandbox_filter_many runs it) in place of an encoder, and "message\n" and
 * its text are followed by "filtered K\n" and K times "message\n" and the
 * text of a message it injected, or by "rejected REASON\n" or "failed
 * REASON\n". A filter also takes requests
 *
 *   timer NS SHUTDOWN\n  timer_event(NS, SHUTDOWN ~= 0), answered with
 *                         "ok K\n" and K messages, or "failed REASON\n",
 *                         then "end\n".
 *
 * Before any request, the plugins loaded make "ready\n"; a plugin that does
 * not load makes "error LEN\n" LEN bytes "\n" and exit status 1. The runtime's log (print() lines among it) goes to stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "message_text.h"
#include "sandbox.h"

/* As --try: every record runs, however many failed before it. */
#define HOST_MAX_FAILURES 1000000000

static void on_log(void *ud, const char *line)
{
  (void)ud;
  fprintf(stderr, "%s\n", line);
}

static sandbox *load(sandbox_kind kind, const char *file, const char *settings,
                     sandbox_watchdog *wd)
{
  static const char *const names[] = {
    [SANDBOX_DECODER] = "decoder", [SANDBOX_ENCODER] = "encoder",
    [SANDBOX_FILTER] = "filter"
  };
  sandbox_config cfg = {
    .name = names[kind],
    .filename = file, .kind = kind, .settings = settings,
    .module_dirs = LUMBERJIT_MODULE_DIR ";" LUMBERJIT_BUILT_MODULES_DIR,
    .log = on_log
  };
  char err[2048];
  sandbox *sb;

  sandbox_limits_default(&cfg.limits);
  cfg.limits.max_failures = HOST_MAX_FAILURES;
  cfg.limits.quiet_rebuilds = true; /* the failure is in the response */
  sb = sandbox_create(&cfg, wd, err, sizeof err);
  if (!sb) printf("error %zu\n%s\n", strlen(err), err);
  return sb;
}

/* The status line of a result that is not SANDBOX_OK. */
static void put_failure(buf *out, const sandbox_result *res)
{
  buf_append_str(out, res->status == SANDBOX_REJECTED ? "rejected "
                      : res->status == SANDBOX_SKIPPED ? "skipped" : "failed ");
  if (res->status != SANDBOX_SKIPPED) buf_append_str(out, res->reason);
  buf_append_str(out, "\n");
}

static void put_encoded(buf *out, buf *encoded, sandbox *encoder,
                        const msg *m)
{
  sandbox_result res;
  char head[40];

  buf_clear(encoded);
  sandbox_encode(encoder, m, encoded, &res);
  if (res.status != SANDBOX_OK) {
    put_failure(out, &res);
    return;
  }
  snprintf(head, sizeof head, "encoded %zu\n", encoded->len);
  buf_append_str(out, head);
  buf_append(out, encoded->data, encoded->len);
  buf_append_str(out, "\n");
}

/* "message\n" and the text of each message of the batch from `first`. */
static void put_messages(buf *out, const msg_batch *batch, uint32_t first)
{
  for (uint32_t i = first; i < batch->len; i++) {
    buf_append_str(out, "message\n");
    message_text(out, &batch->msgs[i], "  ");
  }
}

static void filter_ended(void *ud, size_t i, const sandbox_result *res)
{
  (void)i;
  *(sandbox_result *)ud = *res;
}

/* Message m through the filter, as the router runs it: a batch of one. */
static void put_filtered(buf *out, msg_batch *filtered, sandbox *filter,
                         const msg *m)
{
  sandbox_result res;
  sandbox_each each = {NULL, filter_ended, &res};
  char head[40];

  msg_batch_clear(filtered);
  sandbox_filter_many(filter, &m, 1, filtered, &each);
  if (res.status != SANDBOX_OK) {
    put_failure(out, &res);
    return;
  }
  snprintf(head, sizeof head, "filtered %" PRIu32 "\n", filtered->len);
  buf_append_str(out, head);
  put_messages(out, filtered, 0);
}

/* A "timer NS SHUTDOWN" request: the filter's timer_event. */
static void put_timer(buf *out, msg_batch *injected, sandbox *filter,
                      const char *line)
{
  msg_origin origin = {.input = "timer"};
  sandbox_result res;
  int64_t ns;
  int shutdown;
  char head[40];

  if (!filter || sscanf(line, "timer %" SCNd64 " %d", &ns, &shutdown) != 2) {
    fprintf(stderr, "sandbox_host: bad timer request: %s", line);
    exit(2);
  }
  msg_batch_clear(injected);
  sandbox_timer_event(filter, ns, shutdown != 0, &origin, injected, &res);
  if (res.status != SANDBOX_OK) {
    put_failure(out, &res);
  } else {
    snprintf(head, sizeof head, "ok %" PRIu32 "\n", injected->len);
    buf_append_str(out, head);
    put_messages(out, injected, 0);
  }
  buf_append_str(out, "end\n");
}

/* Reads one record request, whose line is `line`. */
static void read_request(const char *line, char **data, size_t *cap,
                         size_t *record_len, size_t *origin_len,
                         bool *has_origin)
{
  int fields = sscanf(line, "%zu %zu", record_len, origin_len);

  if (fields < 1) {
    fprintf(stderr, "sandbox_host: bad request line: %s", line);
    exit(2);
  }
  *has_origin = fields == 2;
  if (!*has_origin) *origin_len = 0;
  if (*record_len + *origin_len + 1 > *cap) {
    *cap = *record_len + *origin_len + 1;
    *data = realloc(*data, *cap);
    if (!*data) exit(2);
  }
  if (fread(*data, 1, *record_len + *origin_len, stdin) !=
      *record_len + *origin_len) {
    fprintf(stderr, "sandbox_host: a request ends early\n");
    exit(2);
  }
}

int main(int argc, char **argv)
{
  sandbox_watchdog *wd;
  sandbox *decoder, *encoder = NULL, *filter = NULL;
  bool filtering = argc == 6 && strcmp(argv[3], "--filter") == 0;
  msg_batch batch = {0}, filtered = {0};
  buf out = {0}, encoded = {0};
  char err[256], line[64], *data = NULL;
  size_t cap = 0, record_len, origin_len;
  bool has_origin;

  if (argc != 3 && argc != 5 && !filtering) {
    fprintf(stderr, "usage: sandbox_host DECODER SETTINGS "
                    "[ENCODER SETTINGS | --filter FILTER SETTINGS]\n");
    return 2;
  }
  wd = sandbox_watchdog_start(10, err, sizeof err);
  if (!wd) {
    fprintf(stderr, "sandbox_host: %s\n", err);
    return 2;
  }
  decoder = load(SANDBOX_DECODER, argv[1], argv[2], wd);
  if (decoder && argc == 5) encoder = load(SANDBOX_ENCODER, argv[3], argv[4], wd);
  if (decoder && filtering) filter = load(SANDBOX_FILTER, argv[4], argv[5], wd);
  if (!decoder || (argc == 5 && !encoder) || (filtering && !filter)) {
    sandbox_destroy(decoder);
    sandbox_watchdog_stop(wd);
    return 1;
  }
  puts("ready");
  fflush(stdout);
  while (fgets(line, sizeof line, stdin)) {
    msg_origin rec;
    sandbox_result res;

    buf_clear(&out);
    if (strncmp(line, "timer ", 6) == 0) {
      put_timer(&out, &filtered, filter, line);
      fwrite(out.data, 1, out.len, stdout);
      fflush(stdout);
      continue;
    }
    read_request(line, &data, &cap, &record_len, &origin_len, &has_origin);
    rec = (msg_origin){.input = "spec", .bytes = data, .len = record_len};
    msg_batch_clear(&batch);
    sandbox_decode(decoder, &rec, &batch, &res);
    if (res.status != SANDBOX_OK) put_failure(&out, &res);
    else {
      char head[40];
      snprintf(head, sizeof head, "ok %" PRIu32 "\n", batch.len);
      buf_append_str(&out, head);
    }
    for (uint32_t i = 0; res.status == SANDBOX_OK && i < batch.len; i++) {
      msg *m = &batch.msgs[i];
      if (has_origin) {
        m->origin.bytes = origin_len ? data + record_len : NULL;
        m->origin.len = origin_len;
      }
      buf_append_str(&out, "message\n");
      message_text(&out, m, "  ");
      if (encoder) put_encoded(&out, &encoded, encoder, m);
      if (filter) put_filtered(&out, &filtered, filter, m);
    }
    buf_append_str(&out, "end\n");
    fwrite(out.data, 1, out.len, stdout);
    fflush(stdout);
  }
  sandbox_destroy(filter);
  sandbox_destroy(encoder);
  sandbox_destroy(decoder);
  sandbox_watchdog_stop(wd);
  msg_batch_free(&batch);
  msg_batch_free(&filtered);
  buf_free(&out);
  buf_free(&encoded);
  free(data);
  return 0;
}
