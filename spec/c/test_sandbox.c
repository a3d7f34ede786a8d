/*
 * test_sandbox.c - the sandbox runtime through its C API: the plugin API,
 * every limit (with the JIT on and the runaway loop already compiled), the
 * blocked escapes, rebuild after failure and stop after repeated failures.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sandbox.h"

static char dir[] = "/tmp/lumberjit-test-sandbox-XXXXXX";
static sandbox_watchdog *wd;
static char last_log[2048];
static int log_lines;

static void on_log(void *ud, const char *line)
{
  (void)ud;
  snprintf(last_log, sizeof last_log, "%s", line);
  log_lines++;
}

static const char *written[32];
static size_t nwritten;

static const char *write_plugin(const char *name, const char *src)
{
  static char path[512];
  FILE *f;

  if (nwritten < sizeof written / sizeof *written) written[nwritten++] = name;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "w");
  fputs(src, f);
  fclose(f);
  return path;
}

static sandbox *make(sandbox_kind kind, const char *name, const char *src,
                     const sandbox_limits *limits, char *err, size_t errlen)
{
  sandbox_config cfg = {0};

  cfg.name = name;
  cfg.filename = write_plugin(name, src);
  cfg.kind = kind;
  cfg.settings = "return { greeting = 'hello', n = 3 }";
  cfg.module_dirs = LUMBERJIT_MODULE_DIR ";/tmp";
  if (limits) cfg.limits = *limits;
  else sandbox_limits_default(&cfg.limits);
  cfg.log = on_log;
  return sandbox_create(&cfg, wd, err, errlen);
}

static sandbox *decoder(const char *name, const char *src,
                        const sandbox_limits *limits)
{
  char err[512];
  sandbox *sb = make(SANDBOX_DECODER, name, src, limits, err, sizeof err);
  if (!sb) fprintf(stderr, "cannot create %s: %s\n", name, err);
  return sb;
}

static msg_batch batch;

static sandbox_status decode(sandbox *sb, const char *rec, sandbox_result *res)
{
  msg_origin o = {.input = "test", .position = 7, .bytes = rec,
                  .len = strlen(rec)};
  msg_batch_clear(&batch);
  sandbox_decode(sb, &o, &batch, res);
  return res->status;
}

static const char *payload(int i)
{
  static char s[256];
  const msg *m = &batch.msgs[i];
  snprintf(s, sizeof s, "%.*s", (int)m->payload.len, msg_str(m, m->payload));
  return s;
}

/* Tables inject_message must refuse, and why. */
static const struct {
  const char *table, *reason;
} bad_values[] = {
  {"{Severity = 1e20}", "Severity is out of range"},
  {"{Pid = -1/0}", "Pid is out of range"},
  {"{Timestamp = 0/0}", "Timestamp is out of range"},
  {"{Fields = {n = {value = 1e19, value_type = 2}}}",
   "field 'n' is out of the integer range"},
  {"{Fields = {n = {value = 1, value_type = 9}}}",
   "field 'n' has an unknown value_type"},
  {"{Colour = 'red'}", "unknown key 'Colour'"},
  {"{Payload = 5}", "Payload must be a string, not a number"},
  {"{Fields = {t = {1, 'a'}}}", "field 't' mixes value types"},
  {"{Uuid = '0123456789abcdef0123456789abcdef0123'}",
   "Uuid must be 16 bytes or 36 characters"},
};

static void test_decoder_api(void)
{
  sandbox_result res;
  const msg_field *f;
  sandbox *sb = decoder("api.lua",
    "local greeting = read_config('greeting')\n"
    "function process_message(rec)\n"
    "  if rec == 'bad' then return -1, 'not a greeting' end\n"
    "  inject_message({Payload = greeting .. ' ' .. rec, Severity = 4,\n"
    "    Timestamp = 1e18, Hostname = 'h', Fields = {n = read_config('n'),\n"
    "    tags = {'a', 'b'}, ok = true, i = {value = 5, value_type = 2}}})\n"
    "  inject_message({Payload = 'second'})\n"
    "end\n", NULL);

  CHECK(sb != NULL);
  if (!sb) return;
  CHECK(decode(sb, "world", &res) == SANDBOX_OK);
  CHECK(batch.len == 2);
  CHECK(strcmp(payload(0), "hello world") == 0);
  CHECK(strcmp(payload(1), "second") == 0);
  CHECK(batch.msgs[0].severity == 4 && batch.msgs[0].has_severity);
  CHECK(batch.msgs[0].timestamp == 1000000000000000000LL);
  CHECK(batch.msgs[0].origin.position == 7);
  f = msg_find_field(&batch.msgs[0], "tags", 4, 0);
  CHECK(f && f->count == 2 && f->type == MSG_STRING);
  f = msg_find_field(&batch.msgs[0], "n", 1, 0);
  CHECK(f && f->type == MSG_DOUBLE && msg_field_values(&batch.msgs[0], f)->d == 3);
  f = msg_find_field(&batch.msgs[0], "i", 1, 0);
  CHECK(f && f->type == MSG_INTEGER && msg_field_values(&batch.msgs[0], f)->i == 5);
  f = msg_find_field(&batch.msgs[0], "ok", 2, 0);
  CHECK(f && f->type == MSG_BOOL && msg_field_values(&batch.msgs[0], f)->b);
  /* In name order, whatever the table's. */
  CHECK(batch.msgs[0].nfields == 4);
  for (uint32_t i = 0; i < batch.msgs[0].nfields && i < 4; i++) {
    static const char *const order[] = {"i", "n", "ok", "tags"};
    msg_span s = batch.msgs[0].fields[i].name;
    CHECK(s.len == strlen(order[i]) &&
          memcmp(msg_str(&batch.msgs[0], s), order[i], s.len) == 0);
  }

  CHECK(decode(sb, "bad", &res) == SANDBOX_REJECTED);
  CHECK_CONTAINS(res.reason, "not a greeting");
  CHECK(batch.len == 0);
  sandbox_destroy(sb);

  /* Values a C message cannot hold are errors, not undefined conversions. */
  sb = decoder("range.lua",
    "function process_message(rec) inject_message(assert(loadstring('return ' .. rec))()) end\n",
    NULL);
  CHECK(sb != NULL);
  if (!sb) return;
  for (size_t i = 0; i < sizeof bad_values / sizeof *bad_values; i++) {
    CHECK(decode(sb, bad_values[i].table, &res) == SANDBOX_FAILED);
    CHECK_CONTAINS(res.reason, bad_values[i].reason);
  }
  CHECK(decode(sb, "{Uuid = '01234567-89ab-cdef-0123-456789abcdef', Payload = 'u'}", &res) == SANDBOX_OK);
  CHECK(batch.len == 1 && batch.msgs[0].has_uuid && batch.msgs[0].uuid[15] == 0xef);
  sandbox_destroy(sb);

  sb = decoder("print.lua",
    "function process_message(rec) print('got', rec, 42) end\n", NULL);
  CHECK(sb != NULL);
  if (!sb) return;
  log_lines = 0;
  CHECK(decode(sb, "x", &res) == SANDBOX_OK);
  CHECK(log_lines == 1);
  CHECK(strcmp(last_log, "sandbox \"print.lua\" print: got\tx\t42") == 0);
  sandbox_destroy(sb);
}

/* The text of field `name` (its i-th value) in the first message. */
static const char *field_text(const char *name, uint32_t i)
{
  static char s[256];
  const msg *m = &batch.msgs[0];
  const msg_field *f = msg_find_field(m, name, strlen(name), 0);
  const msg_value *v;

  if (!f || f->type != MSG_STRING || i >= f->count) return "(none)";
  v = msg_field_values(m, f) + i;
  snprintf(s, sizeof s, "%.*s", (int)v->s.len, msg_str(m, v->s));
  return s;
}

/* Fields come out in name order whatever the table's layout, also when a
 * reused Fields table gains and loses keys between messages (the fast path
 * reuses the last message's order only while it still holds). */
static void test_field_order(void)
{
  static const char *const want[] = {
    "a b c", "a c", "a b c d", "b d", "a b c d", "c", "a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 b",
  };
  sandbox_result res;
  sandbox *sb = decoder("order.lua",
    "local fields = {}\n"
    "local message = {Payload = 'x', Fields = fields}\n"
    "function process_message(rec)\n"
    "  for k in pairs(fields) do fields[k] = nil end\n"
    "  for name in rec:gmatch('%S+') do fields[name] = #name end\n"
    "  inject_message(message)\n"
    "end\n", NULL);
  const char *recs[] = {"c b a", "c a", "d c b a", "d b", "b a d c", "c",
                        "a9 a8 a7 a6 a5 a4 a3 a2 a1 a0 b"};

  CHECK(sb != NULL);
  if (!sb) return;
  for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
    char got[256] = "";
    CHECK(decode(sb, recs[i], &res) == SANDBOX_OK);
    for (uint32_t k = 0; k < batch.msgs[0].nfields; k++) {
      const msg_field *f = &batch.msgs[0].fields[k];
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%.*s", k ? " " : "",
               (int)f->name.len, msg_str(&batch.msgs[0], f->name));
    }
    CHECK_CONTAINS(got, want[i]);
    CHECK(strlen(got) == strlen(want[i]));
  }
  sandbox_destroy(sb);
}

/* record_span: parts of the record by position, read when injected; the
 * table walk of the fast path (scalars) and of the Lua API (arrays) alike. */
static void test_record_spans(void)
{
  sandbox_result res;
  sandbox *sb = decoder("spans.lua",
    "local a, b = record_span(), record_span()\n"
    "local lookalike = setmetatable({1, 2}, {__metatable = false})\n"
    "function process_message(rec)\n"
    "  local from, to = rec:match('^(%d+) (%d+)')\n"
    "  a[1], a[2] = tonumber(from), tonumber(to)\n"
    "  b[1], b[2] = 1, 4\n"
    "  if rec:find('array') then\n"
    "    inject_message({Payload = a, Fields = {both = {a, b}}})\n"
    "  elseif rec:find('lookalike') then\n"
    "    inject_message({Payload = lookalike})\n"
    "  else\n"
    "    inject_message({Payload = a, Hostname = b, Fields = {b = b,\n"
    "      mt = tostring(getmetatable(a))}})\n"
    "  end\n"
    "end\n", NULL);

  CHECK(sb != NULL);
  if (!sb) return;
  CHECK(decode(sb, "6 11 hello", &res) == SANDBOX_OK);
  CHECK(strcmp(payload(0), "hello") == 0);
  CHECK(batch.msgs[0].hostname.len == 3 &&
        memcmp(msg_str(&batch.msgs[0], batch.msgs[0].hostname), "6 1", 3) == 0);
  CHECK(strcmp(field_text("b", 0), "6 1") == 0);
  CHECK(strcmp(field_text("mt", 0), "false") == 0);
  CHECK(decode(sb, "3 3 empty", &res) == SANDBOX_OK);
  CHECK(batch.len == 1 && batch.msgs[0].payload.len == 0);
  CHECK(decode(sb, "1 12 an array", &res) == SANDBOX_OK);
  CHECK(strcmp(payload(0), "1 12 an arr") == 0);
  CHECK(strcmp(field_text("both", 1), "1 1") == 0);
  /* Positions outside the record, backwards or not whole are errors. */
  CHECK(decode(sb, "1 99 beyond", &res) == SANDBOX_FAILED);
  CHECK_CONTAINS(res.reason, "inject_message: Payload is a record span whose "
                 "positions are not in the record (1 <= span[1] <= span[2] <= 12)");
  CHECK(decode(sb, "5 4 backwards", &res) == SANDBOX_FAILED);
  CHECK_CONTAINS(res.reason, "Payload is a record span");
  CHECK(decode(sb, "1 99 array", &res) == SANDBOX_FAILED);
  CHECK_CONTAINS(res.reason, "is a record span whose positions are not in");
  CHECK(decode(sb, "0 2 zero", &res) == SANDBOX_FAILED);
  /* A table with a metatable of its own is no span. */
  CHECK(decode(sb, "1 2 lookalike", &res) == SANDBOX_FAILED);
  CHECK_CONTAINS(res.reason, "Payload must be a string, not a table");
  sandbox_destroy(sb);
}

/* process_record: the record read by position, never as cdata, and
 * nothing of it outside a call. */
static void test_process_record(void)
{
  sandbox_result res;
  sandbox *sb = decoder("by_position.lua",
    "local at_load = tostring(record_byte(1)) .. ' ' .. #record_text()\n"
    "local spaces = record_stops(' ')\n"
    "local a = record_span()\n"
    "function process_record(length)\n"
    "  local first_space = record_find(spaces, 1)\n"
    "  a[1], a[2] = first_space + 1, length + 1\n"
    "  inject_message({Payload = a, Fields = {\n"
    "    length = length, first = record_byte(1), last = record_byte(length),\n"
    "    outside = tostring(record_byte(0)) .. tostring(record_byte(length + 1)),\n"
    "    kind = type(record_byte(1)), word = record_text(1, first_space),\n"
    "    next_space = record_find(spaces, first_space + 1), past = record_find(spaces, 99),\n"
    "    nan = record_find(spaces, 0/0), at_load = at_load,\n"
    "    decimal = tostring(record_decimal(1, first_space)),\n"
    "    decimal_edges = tostring(record_decimal(1, 1)) .. tostring(record_decimal(1, length + 2))\n"
    "      .. tostring(record_decimal(0, 2))}})\n"
    "  if record_byte(1) == 98 then record_text(2, 1) end\n"
    "  if record_byte(1) == 115 then record_find(99, 1) end\n"
    "end\n", NULL);

  CHECK(sb != NULL);
  if (!sb) return;
  CHECK(decode(sb, "hello big world", &res) == SANDBOX_OK);
  CHECK(strcmp(payload(0), "big world") == 0);
  CHECK(strcmp(field_text("word", 0), "hello") == 0);
  CHECK(strcmp(field_text("outside", 0), "nilnil") == 0);
  CHECK(strcmp(field_text("kind", 0), "number") == 0);
  CHECK(strcmp(field_text("at_load", 0), "nil 0") == 0);
  {
    const msg *m = &batch.msgs[0];
    const char *names[] = {"length", "first", "last", "next_space", "past", "nan"};
    double want[] = {15, 'h', 'd', 10, 16, 6};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
      const msg_field *f = msg_find_field(m, names[i], strlen(names[i]), 0);
      CHECK(f && f->type == MSG_DOUBLE && msg_field_values(m, f)[0].d == want[i]);
    }
  }
  CHECK(strcmp(field_text("decimal", 0), "nil") == 0);
  CHECK(strcmp(field_text("decimal_edges", 0), "nilnilnil") == 0);
  CHECK(decode(sb, "000123456789012345 x", &res) == SANDBOX_OK);
  CHECK(strcmp(field_text("decimal", 0), "nil") == 0); /* 18 digits: over 15 */
  CHECK(decode(sb, "004217 x", &res) == SANDBOX_OK);
  CHECK(strcmp(field_text("decimal", 0), "4217") == 0);
  CHECK(decode(sb, "bad positions", &res) == SANDBOX_FAILED);
  CHECK_CONTAINS(res.reason, "record_text: positions not in the record (1 <= from <= to <= 14)");
  CHECK(decode(sb, "set unknown", &res) == SANDBOX_FAILED);
  CHECK_CONTAINS(res.reason, "record_find: not a set made by record_stops");
  /* The rebuilt state's top level ran with no record to read either. */
  CHECK(decode(sb, "hello again", &res) == SANDBOX_OK);
  CHECK(strcmp(field_text("at_load", 0), "nil 0") == 0);
  sandbox_destroy(sb);
}

/* Field x with the values "a" and "bc", and "raw!" as the original
 * record. */
static void add_x_and_raw(msg *m)
{
  msg_field *f = msg_add_field(m, "x", 1, MSG_STRING, 2);

  msg_store(m, "a", 1, &msg_field_values(m, f)[0].s);
  msg_store(m, "bc", 2, &msg_field_values(m, f)[1].s);
  m->origin.bytes = "raw!";
  m->origin.len = 4;
}

static void test_encoder_api(void)
{
  char err[512];
  sandbox_result res;
  buf out = {0};
  msg m;
  msg_field *f;
  sandbox *sb = make(SANDBOX_ENCODER, "enc.lua",
    "function process_message()\n"
    "  local p = read_message('Payload')\n"
    "  if p == 'skip' then return -2 end\n"
    "  if p == 'reject' then return -1, 'no thanks' end\n"
    "  local t, name, value, rep, count = read_next_field()\n"
    "  inject_payload('txt', '', p, '|', read_message('Fields[x]', 0, 1), '|',\n"
    "    name, '|', #value, '|', count, '|', tostring((read_next_field())), '|',\n"
    "    read_message('raw'))\n"
    "end\n", NULL, err, sizeof err);

  CHECK(sb != NULL);
  if (!sb) {
    fprintf(stderr, "%s\n", err);
    return;
  }
  msg_init(&m);
  msg_store(&m, "p1", 2, &m.payload);
  add_x_and_raw(&m);
  sandbox_encode(sb, &m, &out, &res);
  CHECK(res.status == SANDBOX_OK);
  CHECK(out.len == strlen("p1|bc|x|2|2|nil|raw!") &&
        memcmp(out.data, "p1|bc|x|2|2|nil|raw!", out.len) == 0);

  buf_clear(&out);
  msg_reset(&m);
  msg_store(&m, "skip", 4, &m.payload);
  sandbox_encode(sb, &m, &out, &res);
  CHECK(res.status == SANDBOX_SKIPPED && out.len == 0);
  msg_store(&m, "reject", 6, &m.payload);
  sandbox_encode(sb, &m, &out, &res);
  CHECK(res.status == SANDBOX_REJECTED && out.len == 0);
  CHECK_CONTAINS(res.reason, "no thanks");
  sandbox_destroy(sb);

  /* read_message's edges: odd arguments, every header, absent values. */
  sb = make(SANDBOX_ENCODER, "edges.lua",
    "function process_message()\n"
    "  local out = {}\n"
    "  local function try(...)\n"
    "    local ok, v = pcall(read_message, ...)\n"
    "    out[#out + 1] = ok and tostring(v) or v:gsub('^.-: ', '')\n"
    "  end\n"
    "  try('Timestamp') try('Severity') try('Pid') try('Type') try('Logger')\n"
    "  try('Hostname') try('EnvVersion') try('Uuid') try('Fields[x]', 0, 2)\n"
    "  try('Fields[x]', -1) try('Fields[x]', 0.5) try('Fields[nope]')\n"
    "  try('Fields[n]') try('Fields[b]') try('Fields[x]', 'a')\n"
    "  try(42) try('Nonsense') try('Fields[x]', 1)\n"
    "  return table.concat(out, '|')\n"
    "end\n", NULL, err, sizeof err);
  CHECK(sb != NULL);
  if (!sb) return;
  buf_clear(&out);
  msg_reset(&m);
  m.timestamp = 1234567890123456789LL;
  m.severity = 3;
  m.has_severity = true;
  msg_store(&m, "host", 4, &m.hostname);
  f = msg_add_field(&m, "x", 1, MSG_STRING, 1);
  msg_store(&m, "only", 4, &msg_field_values(&m, f)[0].s);
  f = msg_add_field(&m, "n", 1, MSG_INTEGER, 1);
  msg_field_values(&m, f)->i = -7;
  f = msg_add_field(&m, "b", 1, MSG_BOOL, 1);
  msg_field_values(&m, f)->b = false;
  sandbox_encode(sb, &m, &out, &res);
  CHECK(res.status == SANDBOX_OK);
  buf_append(&out, "", 1);
  CHECK_CONTAINS(out.data, "1.2345678901235e+18|3|nil|nil|nil|host|nil|nil|nil|"
                 "nil|nil|nil|-7|false|"
                 "bad argument to 'read_message' (field_index must be a number)|"
                 "bad argument #1 to 'read_message' (string expected, got number)|"
                 "unknown name 'Nonsense'|nil");
  sandbox_destroy(sb);

  /* Reading outside a call is an error, not a read of stale memory. */
  CHECK(make(SANDBOX_ENCODER, "early.lua", "local p = read_message('Payload')\n"
             "function process_message() end\n", NULL, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "early.lua:1: read_message: there is no current message");

  /* A returned string counts against the output limit too. */
  sb = make(SANDBOX_ENCODER, "bigenc.lua",
    "function process_message() return string.rep('x', 100000) end\n",
    NULL, err, sizeof err);
  CHECK(sb != NULL);
  if (!sb) return;
  buf_clear(&out);
  sandbox_encode(sb, &m, &out, &res);
  CHECK(res.status == SANDBOX_FAILED && res.limit == SANDBOX_LIMIT_OUTPUT);
  CHECK(out.len == 0);
  CHECK_CONTAINS(res.reason, "output limit exceeded: limit 65536 bytes, "
                 "emitted 100000, at the return of process_message");
  msg_free(&m);
  buf_free(&out);
  sandbox_destroy(sb);
}

/* inject_message_value writes what read_message reads, as text: headers,
 * string fields from the message's own bytes, numbers as tostring writes
 * them; false and nothing written when absent. (Its output limit:
 * test_sandbox_batch.c.) */
static void test_inject_message_value(void)
{
  char err[512];
  sandbox_result res;
  buf out = {0};
  msg m;
  msg_field *f;
  sandbox *sb = make(SANDBOX_ENCODER, "value.lua",
    "function process_message()\n"
    "  local function put(...)\n"
    "    local ok, v = pcall(inject_message_value, ...)\n"
    "    inject_payload('', '', '|', ok and tostring(v) or v:gsub('^.-: ', ''), '|')\n"
    "  end\n"
    "  put('Payload') put('Hostname') put('Type') put('Logger') put('EnvVersion')\n"
    "  put('Fields[x]', 0, 1) put('Fields[x]', 1) put('Fields[n]') put('Fields[b]')\n"
    "  put('Timestamp') put('Severity') put('Pid') put('raw') put('Fields[x]', -1)\n"
    "  put('Fields[x]', 'a')\n"
    "  put('Nonsense')\n"
    "end\n", NULL, err, sizeof err);

  CHECK(sb != NULL);
  if (!sb) return;
  msg_init(&m);
  m.timestamp = 1234567890123456789LL;
  m.severity = 3;
  m.has_severity = true;
  msg_store(&m, "line \0 of bytes", 15, &m.payload);
  msg_store(&m, "host", 4, &m.hostname);
  add_x_and_raw(&m);
  f = msg_add_field(&m, "n", 1, MSG_INTEGER, 1);
  msg_field_values(&m, f)->i = -7;
  f = msg_add_field(&m, "b", 1, MSG_BOOL, 1);
  msg_field_values(&m, f)->b = false;
  sandbox_encode(sb, &m, &out, &res);
  CHECK(res.status == SANDBOX_OK);
  {
    static const char want[] =
      "line \0 of bytes|true|host|true||false||false||false|"
      "bc|true||false|-7|true|false|true|1.2345678901235e+18|true|3|true|"
      "|false|raw!|true||false|"
      "|bad argument to 'inject_message_value' (field_index must be a number)|"
      "|unknown name 'Nonsense'|";
    CHECK(out.len == sizeof want - 1 && memcmp(out.data, want, out.len) == 0);
    if (out.len != sizeof want - 1 || memcmp(out.data, want, out.len) != 0)
      fwrite(out.data, 1, out.len, stderr);
  }
  msg_free(&m);
  buf_free(&out);
  sandbox_destroy(sb);
}

/* A runaway record must fail with `limit`, leave no output, and the next
 * record must go through the rebuilt state. */
static void expect_stopped(sandbox *sb, const char *rec, sandbox_limit limit,
                           const char *reason)
{
  sandbox_result res;
  sandbox_stats before, after;

  sandbox_get_stats(sb, &before);
  CHECK(decode(sb, rec, &res) == SANDBOX_FAILED);
  CHECK(res.limit == limit);
  CHECK(batch.len == 0);
  CHECK_CONTAINS(res.reason, reason);
  CHECK_CONTAINS(last_log, "state rebuilt");
  CHECK_CONTAINS(last_log, "input \"test\" record 7");
  sandbox_get_stats(sb, &after);
  CHECK(after.restarts == before.restarts + 1);
  CHECK(after.failed == before.failed + 1);
  CHECK(after.failures[limit] == before.failures[limit] + 1);
  CHECK(after.cpu_ns > before.cpu_ns);
  CHECK(after.stops == before.stops);
  CHECK(decode(sb, "fine", &res) == SANDBOX_OK);
  CHECK(batch.len == 1 && strcmp(payload(0), "fine") == 0);
}

static const char runaway_src[] =
  "local x = 0\n"
  "local function spin() while true do x = x + 1 end end\n"
  "local function sum(n) for i = 1, n do x = x + i end end\n"
  "function process_message(rec)\n"
  "  if rec == 'loop' then while true do end end\n"
  "  if rec == 'spin' then spin() end\n"
  "  if rec == 'warm' then sum(1e5) end\n"
  "  if rec == 'sum' then sum(1e12) end\n"
  "  if rec == 'pcall' then while true do pcall(spin) end end\n"
  "  if rec == 'co' then coroutine.wrap(spin)() end\n"
  "  if rec == 'hog' then local t = {} while true do t[#t + 1] = string.rep('x', 1e5) .. #t end end\n"
  "  if rec == 'hogpcall' then local t = {} while true do pcall(function() t[#t + 1] = string.rep('y', 1e5) .. #t end) end end\n"
  "  if rec == 'big' then inject_message({Payload = string.rep('z', 1e6)}) end\n"
  "  if rec == 'bigpcall' then for i = 1, 100 do pcall(inject_message, {Payload = string.rep('z', 1e4)}) end end\n"
  "  if rec == 'err' then error('boom') end\n"
  "  if rec == 'fine' then inject_message({Payload = rec}) end\n"
  "  if rec == 'wide' then local t = {} for i = 1, 2e5 do t[i] = i end inject_message({Fields = {n = t}}) end\n"
  "  if rec == 'many' then for i = 1, 100 do inject_message({Payload = string.rep('z', 922),\n"
  "    Severity = 1, Fields = {f = 'abc', n = 1, b = true}}) end end\n"
  "end\n";

static void pause_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_cpu_limit(void)
{
  sandbox_limits l;
  sandbox_result res;
  sandbox *sb;

  sandbox_limits_default(&l);
  l.instruction_limit = 0;
  l.cpu_limit_ms = 50;
  l.max_failures = 100;
  sb = decoder("cpu.lua", runaway_src, &l);
  CHECK(sb != NULL);
  if (!sb) return;
  /* The watchdog sleeps while no sandbox is in a batch: the runaway's batch
   * wakes it. */
  pause_ms(50);
  expect_stopped(sb, "loop", SANDBOX_LIMIT_CPU, "cpu limit exceeded: limit 50 ms");
  pause_ms(50);
  CHECK_CONTAINS(last_log, "cpu.lua:5");
  expect_stopped(sb, "spin", SANDBOX_LIMIT_CPU, "cpu.lua:2");
  /* The loop in sum() is compiled by the warm-up calls before it runs away. */
  for (int i = 0; i < 20; i++) CHECK(decode(sb, "warm", &res) == SANDBOX_OK);
  expect_stopped(sb, "sum", SANDBOX_LIMIT_CPU, "cpu.lua:3");
  expect_stopped(sb, "pcall", SANDBOX_LIMIT_CPU, "cpu limit exceeded");
  expect_stopped(sb, "co", SANDBOX_LIMIT_CPU, "cpu.lua:2");
  sandbox_destroy(sb);
}

static void test_instruction_limit(void)
{
  sandbox_limits l;
  sandbox_result res;
  sandbox *sb;

  sandbox_limits_default(&l);
  l.cpu_limit_ms = 0;
  l.instruction_limit = 2000000;
  sb = decoder("instr.lua", runaway_src, &l);
  CHECK(sb != NULL);
  if (!sb) return;
  expect_stopped(sb, "loop", SANDBOX_LIMIT_INSTRUCTIONS,
                 "instruction limit exceeded: limit 2000000");
  for (int i = 0; i < 20; i++) CHECK(decode(sb, "warm", &res) == SANDBOX_OK);
  expect_stopped(sb, "sum", SANDBOX_LIMIT_INSTRUCTIONS, "instr.lua:3");
  expect_stopped(sb, "pcall", SANDBOX_LIMIT_INSTRUCTIONS, "instruction limit");
  sandbox_destroy(sb);
}

/* A compiled loop of record reads (FFI loads and C calls in the trace) is
 * stopped by either limit like any other. */
static void test_process_record_limits(void)
{
  static const char src[] =
    "local spaces, x = record_stops(' '), 0\n"
    "function process_record(length)\n"
    "  if record_byte(1) ~= 108 then\n"
    "    x = x + record_find(spaces, 1)\n"
    "    return inject_message({Payload = record_text()})\n"
    "  end\n"
    "  while true do x = x + record_find(spaces, 1) + record_byte(length) end\n"
    "end\n";
  sandbox_limits l;
  sandbox_result res;
  sandbox *sb;

  for (int by_cpu = 0; by_cpu <= 1; by_cpu++) {
    sandbox_limits_default(&l);
    l.cpu_limit_ms = by_cpu ? 50 : 0;
    l.instruction_limit = by_cpu ? 0 : 2000000;
    sb = decoder("record_loop.lua", src, &l);
    CHECK(sb != NULL);
    if (!sb) return;
    for (int i = 0; i < 20; i++) CHECK(decode(sb, "warm up", &res) == SANDBOX_OK);
    expect_stopped(sb, "loop away", by_cpu ? SANDBOX_LIMIT_CPU : SANDBOX_LIMIT_INSTRUCTIONS,
                   by_cpu ? "cpu limit exceeded" : "instruction limit exceeded");
    CHECK_CONTAINS(last_log, "record_loop.lua:7");
    sandbox_destroy(sb);
  }
}

static void test_memory_and_output_limits(void)
{
  sandbox_limits l;
  sandbox *sb;

  sandbox_limits_default(&l);
  l.memory_limit = 4u << 20;
  l.output_limit = 64u << 10;
  sb = decoder("mem.lua", runaway_src, &l);
  CHECK(sb != NULL);
  if (!sb) return;
  expect_stopped(sb, "hog", SANDBOX_LIMIT_MEMORY,
                 "memory limit exceeded: limit 4194304 bytes");
  expect_stopped(sb, "hogpcall", SANDBOX_LIMIT_MEMORY, "memory limit exceeded");
  expect_stopped(sb, "big", SANDBOX_LIMIT_OUTPUT,
                 "output limit exceeded: limit 65536 bytes");
  CHECK_CONTAINS(last_log, "mem.lua:13");
  expect_stopped(sb, "bigpcall", SANDBOX_LIMIT_OUTPUT, "mem.lua:14");
  expect_stopped(sb, "err", SANDBOX_LIMIT_NONE, "mem.lua:15: boom");
  expect_stopped(sb, "wide", SANDBOX_LIMIT_OUTPUT,
                 "output limit exceeded: limit 65536 bytes, emitted 1600065");
  /* Messages of scalars, which inject_message's fast path builds, count
   * as the C walk counts them: 64 + 922 + 8 + (1 + 8 + 3) + 2 * (1 + 8) =
   * 1024 bytes each, so 64 fill the limit and the 65th passes it with the
   * 64 bytes every message counts first. */
  expect_stopped(sb, "many", SANDBOX_LIMIT_OUTPUT,
                 "output limit exceeded: limit 65536 bytes, emitted 65600");
  CHECK_CONTAINS(last_log, "mem.lua:18");
  sandbox_destroy(sb);
}

/* What a plugin's top level built and dropped is freed once it is loaded,
 * LPeg patterns too (userdata with a finalizer, which one collection only
 * finalizes): an idle state holds only what the plugin keeps, here one
 * small pattern whether or not 500 others were built on the way. */
static void test_load_garbage_freed(void)
{
  static const char keeps_src[] =
    "local lpeg = require 'lpeg'\n"
    "local kept = lpeg.P'a' * lpeg.R'09'\n"
    "local built = 0\n"
    "function process_message() return built, kept end\n";
  static const char builds_src[] =
    "local lpeg = require 'lpeg'\n"
    "local kept = lpeg.P'a' * lpeg.R'09'\n"
    "local built = 0\n"
    "local dropped = {}\n"
    "for i = 1, 500 do dropped[i] = lpeg.P(string.rep('x', 100)) + kept end\n"
    "built, dropped = #dropped, nil\n"
    "function process_message() return built, kept end\n";
  sandbox *keeps = decoder("keeps.lua", keeps_src, NULL);
  sandbox *builds = decoder("builds.lua", builds_src, NULL);
  sandbox_stats kept, built;

  CHECK(keeps != NULL && builds != NULL);
  if (!keeps || !builds) return;
  sandbox_get_stats(keeps, &kept);
  sandbox_get_stats(builds, &built);
  CHECK(built.memory_peak > kept.memory + (200u << 10));
  CHECK(built.memory < kept.memory + (4u << 10));
  sandbox_destroy(keeps);
  sandbox_destroy(builds);
}

/* A state at its memory limit still takes records: the runtime's own push
 * of the record cannot raise an error outside a protected call. */
static void test_memory_full_between_calls(void)
{
  sandbox_limits l;
  sandbox_result res;
  static char rec[60000];
  int failed = 0;
  sandbox *sb;

  sandbox_limits_default(&l);
  l.memory_limit = 1u << 20;
  l.max_failures = 1000;
  sb = decoder("keep.lua",
    "kept = {}\n"
    "function process_message(rec) kept[#kept + 1] = rec end\n", &l);
  CHECK(sb != NULL);
  if (!sb) return;
  memset(rec, 'k', sizeof rec - 1);
  for (int i = 0; i < 100; i++) {
    rec[0] = (char)('A' + i % 26); /* distinct strings: none is interned twice */
    rec[1] = (char)('A' + i / 26);
    if (decode(sb, rec, &res) == SANDBOX_FAILED) {
      failed++;
      CHECK(res.limit == SANDBOX_LIMIT_MEMORY);
    }
  }
  CHECK(failed >= 1);
  sandbox_destroy(sb);
}

static void test_input_limit(void)
{
  sandbox_limits l;
  sandbox_result res;
  char rec[300];
  sandbox *sb;

  sandbox_limits_default(&l);
  l.input_limit = 256;
  sb = decoder("input.lua", runaway_src, &l);
  CHECK(sb != NULL);
  if (!sb) return;
  memset(rec, 'a', sizeof rec - 1);
  rec[sizeof rec - 1] = '\0';
  CHECK(decode(sb, rec, &res) == SANDBOX_REJECTED);
  CHECK(res.limit == SANDBOX_LIMIT_INPUT);
  CHECK_CONTAINS(res.reason, "record of 299 bytes, limit 256");
  sandbox_destroy(sb);
}

static void test_stop_after_failures(void)
{
  sandbox_limits l;
  sandbox_result res;
  sandbox_stats st;
  sandbox *sb;

  sandbox_limits_default(&l);
  l.max_failures = 3;
  sb = decoder("fails.lua", runaway_src, &l);
  CHECK(sb != NULL);
  if (!sb) return;
  CHECK(decode(sb, "err", &res) == SANDBOX_FAILED);
  CHECK(decode(sb, "fine", &res) == SANDBOX_OK); /* resets the count */
  for (int i = 0; i < 3; i++) CHECK(decode(sb, "err", &res) == SANDBOX_FAILED);
  CHECK(sandbox_is_stopped(sb));
  CHECK_CONTAINS(last_log, "plugin stopped after 3 failed calls in a row");
  CHECK(decode(sb, "fine", &res) == SANDBOX_STOPPED);
  /* Four Lua errors, one stop; the stopped call ran nothing and holds no
   * state. */
  sandbox_get_stats(sb, &st);
  CHECK(st.failures[SANDBOX_LIMIT_NONE] == 4 && st.failed == 4);
  CHECK(st.stops == 1 && st.calls == 5);
  CHECK(st.memory == 0 && st.memory_peak > 0);
  sandbox_destroy(sb);
}

/* Each escape attempt must be an error inside the script, never a crash. */
static void test_escapes(void)
{
  static const char *const attempts[] = {
    "return io.open('/etc/passwd')",
    "return os.execute('true')",
    "return os.getenv('HOME')",
    "return os.exit(1)",
    "return require('ffi')",
    "return require('jit')",
    "return require('debug')",
    "return require('io')",
    "return require('../../etc/passwd')",
    "return require('os')",
    "return jit.off()",
    "return debug.getregistry()",
    "return package.loadlib('libc.so.6', 'system')",
    "return string.dump(print)",
    "return ('').dump(function() end)",
    "return getmetatable('').__index.dump(function() end)",
    "return newproxy(true)",
    "return getfenv(0)",
    "return setfenv(1, {})",
    "return dofile('/etc/passwd')",
    "return loadfile('/etc/passwd')",
    "return assert(loadstring('\\27LJ\\2\\0'))()",
    "return assert(load('\\27LJ\\2\\0'))()",
    "return assert(load('return 1', 'x', 'b'))()",
    "return collectgarbage and module('x')",
    NULL
  };
  sandbox_result res;
  sandbox *sb = decoder("escape.lua",
    "function process_message(code)\n"
    "  local ok, err = pcall(assert(loadstring(code)))\n"
    "  inject_message({Payload = tostring(ok) .. ' ' .. tostring(err)})\n"
    "end\n", NULL);

  CHECK(sb != NULL);
  if (!sb) return;
  for (int i = 0; attempts[i]; i++) {
    CHECK(decode(sb, attempts[i], &res) == SANDBOX_OK);
    if (res.status == SANDBOX_OK && batch.len == 1 &&
        strncmp(payload(0), "false ", 6) == 0) {
      check_passed++;
    } else {
      check_failed++;
      fprintf(stderr, "escape not blocked: %s -> %s\n", attempts[i],
              res.status == SANDBOX_OK && batch.len ? payload(0) : res.reason);
    }
  }
  /* What is allowed works. */
  CHECK(decode(sb, "return require('lpeg').match(require('lpeg').C(1), 'ab')", &res) == SANDBOX_OK);
  CHECK(strcmp(payload(0), "true a") == 0);
  CHECK(decode(sb, "return require('cjson').encode({1})", &res) == SANDBOX_OK);
  CHECK(strcmp(payload(0), "true [1]") == 0);
  CHECK(decode(sb, "return assert(load('return 1 + 1'))()", &res) == SANDBOX_OK);
  CHECK(strcmp(payload(0), "true 2") == 0);
  CHECK(decode(sb, "return type(os.time()) .. type(os.clock()) .. os.date('!%Y', 0)", &res) == SANDBOX_OK);
  CHECK(strcmp(payload(0), "true numbernumber1970") == 0);
  CHECK(decode(sb, "return #read_zoneinfo('Asia/Shanghai') > 0", &res) == SANDBOX_OK);
  CHECK(strcmp(payload(0), "true true") == 0);
  CHECK(decode(sb, "return read_zoneinfo('../../etc/passwd')", &res) == SANDBOX_OK);
  CHECK(strcmp(payload(0), "true nil") == 0);
  sandbox_destroy(sb);
}

/* Encoders hold the FFI in their read_message; nothing reaches it. */
static void test_encoder_escapes(void)
{
  static const char *const attempts[] = {
    "return require('ffi')",
    "return ffi.C",
    "return getfenv(read_message)",
    "return string.dump(read_message)",
    "return debug.getupvalue(read_message, 1)",
    "return package.loaded.ffi",
    "return read_message.ffi",
    "return jit.util.funcuvname(read_message, 0)",
    NULL
  };
  char err[512];
  sandbox_result res;
  buf out = {0};
  msg m;
  sandbox *sb = make(SANDBOX_ENCODER, "encescape.lua",
    "function process_message()\n"
    "  local ok, err = pcall(assert(loadstring(read_message('Payload'))))\n"
    "  return tostring(ok) .. ' ' .. tostring(err)\n"
    "end\n", NULL, err, sizeof err);

  CHECK(sb != NULL);
  if (!sb) return;
  msg_init(&m);
  for (int i = 0; attempts[i]; i++) {
    msg_reset(&m);
    msg_store(&m, attempts[i], strlen(attempts[i]), &m.payload);
    buf_clear(&out);
    sandbox_encode(sb, &m, &out, &res);
    buf_append(&out, "", 1);
    if (res.status == SANDBOX_OK && strncmp(out.data, "false ", 6) == 0) {
      check_passed++;
    } else {
      check_failed++;
      fprintf(stderr, "encoder escape not blocked: %s -> %s\n", attempts[i],
              res.status == SANDBOX_OK ? out.data : res.reason);
    }
  }
  msg_free(&m);
  buf_free(&out);
  sandbox_destroy(sb);
}

static void test_bad_plugins(void)
{
  char err[512];
  sandbox_limits l;

  CHECK(make(SANDBOX_DECODER, "noentry.lua", "x = 1\n", NULL, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "does not define the function process_message");
  CHECK(make(SANDBOX_DECODER, "trap.lua", "setmetatable(_G, {__index = "
             "function() while true do end end})\n", NULL, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "does not define the function process_message");
  CHECK(make(SANDBOX_DECODER, "syntax.lua", "function (\n", NULL, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "syntax.lua:1:");
  sandbox_limits_default(&l);
  l.cpu_limit_ms = 20;
  l.instruction_limit = 0;
  CHECK(make(SANDBOX_DECODER, "toplevel.lua", "while true do end\n", &l, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "cpu limit exceeded");
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
  test_decoder_api();
  test_record_spans();
  test_field_order();
  test_process_record();
  test_encoder_api();
  test_inject_message_value();
  test_cpu_limit();
  test_instruction_limit();
  test_process_record_limits();
  test_memory_and_output_limits();
  test_load_garbage_freed();
  test_memory_full_between_calls();
  test_input_limit();
  test_stop_after_failures();
  test_escapes();
  test_encoder_escapes();
  test_bad_plugins();
  sandbox_watchdog_stop(wd);
  msg_batch_free(&batch);
  for (size_t i = 0; i < nwritten; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, written[i]);
    unlink(path);
  }
  rmdir(dir);
  return check_summary();
}
