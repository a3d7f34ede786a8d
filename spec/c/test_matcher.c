/*
 * test_matcher.c - the message matcher: every operator on every header,
 * fields of each kind with their indexes, NIL/TRUE/FALSE, precedence,
 * regexes, exact number comparison, and each compile error with its column.
 * Prints each failure as file:line and "N passed, N failed" last.
 */
#include "check.h"
#include "matcher.h"
#include "message.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Compiles expr, evaluates it on m and compares with `want`. */
static void expect_eval(const msg *m, const char *expr, bool want,
                        const char *file, int line)
{
  char err[256], what[5200];
  matcher *mt = matcher_compile(expr, err, sizeof err);

  if (!mt) {
    snprintf(what, sizeof what, "%s: did not compile: %s", expr, err);
    check_at(false, file, line, what);
    return;
  }
  snprintf(what, sizeof what, "%s: expected %s", expr, want ? "a match" : "no match");
  check_at(matcher_eval(mt, m) == want, file, line, what);
  matcher_free(mt);
}

#define MATCHES(m, expr) expect_eval((m), (expr), true, __FILE__, __LINE__)
#define REJECTS(m, expr) expect_eval((m), (expr), false, __FILE__, __LINE__)

/* matcher_constant: expr is decided without a message (and as `want`),
 * or (is_constant false) it is not. */
static void expect_constant(const char *expr, bool is_constant, bool want,
                            const char *file, int line)
{
  char err[256], what[512];
  matcher *mt = matcher_compile(expr, err, sizeof err);
  bool value = !want;

  snprintf(what, sizeof what, "%s: expected %s", expr,
           !is_constant ? "not constant" : want ? "always true" : "always false");
  check_at(mt && matcher_constant(mt, &value) == is_constant &&
               (!is_constant || value == want), file, line, what);
  matcher_free(mt);
}

#define ALWAYS(expr, want) expect_constant((expr), true, (want), __FILE__, __LINE__)
#define DEPENDS(expr) expect_constant((expr), false, false, __FILE__, __LINE__)

/* What a pipeline may decide once for every record (its passthrough). */
static void test_constant(void)
{
  ALWAYS("TRUE", true);
  ALWAYS("FALSE", false);
  ALWAYS("(TRUE)", true);
  ALWAYS("TRUE || Type == 'x'", true);
  ALWAYS("FALSE && Type == 'x'", false);
  ALWAYS("FALSE || TRUE", true);
  ALWAYS("TRUE && FALSE", false);
  DEPENDS("Type == 'x'");
  DEPENDS("TRUE && Type == 'x'");
  DEPENDS("FALSE || Payload =~ /a/");
  DEPENDS("Fields[ok] == TRUE");
}

/* Compiling expr must fail with exactly `want` (or, with prefix_only, with
 * a message that starts with it). */
static void expect_error(const char *expr, const char *want, bool prefix_only,
                         const char *file, int line)
{
  char err[256] = "", what[5600];
  matcher *mt = matcher_compile(expr, err, sizeof err);
  bool ok = !mt && (prefix_only ? strncmp(err, want, strlen(want)) == 0
                                : strcmp(err, want) == 0);

  snprintf(what, sizeof what, "%.200s: expected error \"%s\", got %s%s%s",
           expr, want, mt ? "a matcher" : "\"", mt ? "" : err, mt ? "" : "\"");
  check_at(ok, file, line, what);
  matcher_free(mt);
}

#define COMPILE_ERROR(expr, want) expect_error((expr), (want), false, __FILE__, __LINE__)
#define COMPILE_ERROR_PREFIX(expr, want) expect_error((expr), (want), true, __FILE__, __LINE__)

/* --- building messages ------------------------------------------------ */

static void set_string(msg *m, msg_span *header, const char *value)
{
  if (!msg_store(m, value, strlen(value), header)) abort();
}

static msg_field *add_field(msg *m, const char *name, msg_value_type type,
                            uint32_t count)
{
  msg_field *f = msg_add_field(m, name, strlen(name), type, count);
  if (!f) abort();
  return f;
}

static void add_bytes(msg *m, const char *name, msg_value_type type,
                      const char *bytes, size_t len)
{
  msg_field *f = add_field(m, name, type, 1);
  if (!msg_store(m, bytes, len, &msg_field_values(m, f)[0].s)) abort();
}

static void add_strings(msg *m, const char *name, const char *const *values,
                        uint32_t count)
{
  msg_field *f = add_field(m, name, MSG_STRING, count);
  for (uint32_t i = 0; i < count; i++)
    if (!msg_store(m, values[i], strlen(values[i]), &msg_field_values(m, f)[i].s))
      abort();
}

static void add_integers(msg *m, const char *name, const int64_t *values,
                         uint32_t count)
{
  msg_field *f = add_field(m, name, MSG_INTEGER, count);
  for (uint32_t i = 0; i < count; i++) msg_field_values(m, f)[i].i = values[i];
}

static void add_real(msg *m, const char *name, double value)
{
  msg_field_values(m, add_field(m, name, MSG_DOUBLE, 1))[0].d = value;
}

static void add_bool(msg *m, const char *name, bool value)
{
  msg_field_values(m, add_field(m, name, MSG_BOOL, 1))[0].b = value;
}

#define SAMPLE_TIMESTAMP INT64_C(1700000000123456789)

/* A message with every header set and one field of each kind. */
static void build_sample(msg *m)
{
  static const uint8_t uuid[16] = { 0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1,
                                    0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8 };
  static const char *const tags[] = { "a", "b", "c" };
  static const char *const more_tags[] = { "x" };
  static const int64_t count = 42, codes[] = { 200, 404 }, negative = -5;
  static const int64_t two_pow_53_plus_1 = INT64_C(9007199254740993);

  msg_init(m);
  memcpy(m->uuid, uuid, sizeof uuid);
  m->has_uuid = true;
  m->timestamp = SAMPLE_TIMESTAMP;
  set_string(m, &m->type, "syslog");
  set_string(m, &m->logger, "input.stdin");
  set_string(m, &m->payload, "foo bar 32");
  set_string(m, &m->env_version, "1.0");
  set_string(m, &m->hostname, "snack");
  m->severity = 4;
  m->has_severity = true;
  m->pid = 1234;
  m->has_pid = true;

  add_bytes(m, "programname", MSG_STRING, "jls", 3);
  add_bytes(m, "blob", MSG_BYTES, "a\0b", 3);
  add_integers(m, "count", &count, 1);
  add_integers(m, "negative", &negative, 1);
  add_real(m, "ratio", 0.5);
  add_bool(m, "ok", true);
  add_bool(m, "off", false);
  add_strings(m, "tags", tags, 3);
  add_strings(m, "tags", more_tags, 1);
  add_integers(m, "codes", codes, 2);
  add_integers(m, "big", &two_pow_53_plus_1, 1);
  add_real(m, "bigreal", 9007199254740992.0);
  add_real(m, "nan", NAN);
  add_bytes(m, "empty", MSG_STRING, "", 0);
  add_bytes(m, "two words", MSG_STRING, "yes", 3);
  add_bytes(m, "quote", MSG_STRING, "say \"hi\"\n\tit's C:\\dir", 21);
  add_bytes(m, "url", MSG_STRING, "/api/v1", 7);
}

/* --- headers ------------------------------------------------------------ */

static void test_string_headers(const msg *m)
{
  static const struct { const char *name, *value, *before; } headers[] = {
    { "Type", "syslog", "syslof" },
    { "Logger", "input.stdin", "input.stdim" },
    { "Payload", "foo bar 32", "foo bar 31" },
    { "EnvVersion", "1.0", "0.9" },
    { "Hostname", "snack", "snac" },
    { "Uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
      "6ba7b810-9dad-11d1-80b4-00c04fd430c7" },
  };
  char e[160];

  for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
    const char *h = headers[i].name, *v = headers[i].value, *b = headers[i].before;
#define EXPR(...) (snprintf(e, sizeof e, __VA_ARGS__), e)
    MATCHES(m, EXPR("%s == \"%s\"", h, v));
    REJECTS(m, EXPR("%s == \"%sX\"", h, v));
    REJECTS(m, EXPR("%s == \"%s\"", h, b));
    REJECTS(m, EXPR("%s != '%s'", h, v));
    MATCHES(m, EXPR("%s != '%sX'", h, v));
    MATCHES(m, EXPR("%s < \"%sX\"", h, v)); /* a prefix sorts first */
    REJECTS(m, EXPR("%s < \"%s\"", h, v));
    REJECTS(m, EXPR("%s < \"%s\"", h, b));
    MATCHES(m, EXPR("%s <= \"%s\"", h, v));
    REJECTS(m, EXPR("%s <= \"%s\"", h, b));
    MATCHES(m, EXPR("%s > \"%s\"", h, b));
    REJECTS(m, EXPR("%s > \"%s\"", h, v));
    MATCHES(m, EXPR("%s >= \"%s\"", h, v));
    REJECTS(m, EXPR("%s >= \"%sX\"", h, v));
    MATCHES(m, EXPR("%s =~ /^%s$/", h, v));
    REJECTS(m, EXPR("%s =~ /^%sX$/", h, v));
    MATCHES(m, EXPR("%s !~ /^%sX$/", h, v));
    REJECTS(m, EXPR("%s !~ /^%s$/", h, v));
#undef EXPR
  }
}

static void test_number_headers(const msg *m)
{
  static const struct { const char *name; int64_t value; } headers[] = {
    { "Timestamp", SAMPLE_TIMESTAMP }, { "Severity", 4 }, { "Pid", 1234 },
  };
  char e[160];

  for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
    const char *h = headers[i].name;
    const int64_t v = headers[i].value;
#define EXPR(fmt, n) (snprintf(e, sizeof e, "%s " fmt " %" PRId64, h, (n)), e)
    MATCHES(m, EXPR("==", v));
    REJECTS(m, EXPR("==", v + 1));
    REJECTS(m, EXPR("!=", v));
    MATCHES(m, EXPR("!=", v - 1));
    MATCHES(m, EXPR("<", v + 1));
    REJECTS(m, EXPR("<", v));
    MATCHES(m, EXPR("<=", v));
    REJECTS(m, EXPR("<=", v - 1));
    MATCHES(m, EXPR(">", v - 1));
    REJECTS(m, EXPR(">", v));
    MATCHES(m, EXPR(">=", v));
    REJECTS(m, EXPR(">=", v + 1));
#undef EXPR
  }
}

static void test_numbers_compare_exactly(const msg *m)
{
  /* 1700000000123456789 and ...768 are the same double. */
  MATCHES(m, "Timestamp == 1700000000123456789");
  REJECTS(m, "Timestamp == 1700000000123456768");
  MATCHES(m, "Timestamp > 1700000000123456768");
  REJECTS(m, "Timestamp == 1.700000000123456789e18"); /* a double literal */
  MATCHES(m, "Timestamp > 1.7e18 && Timestamp < 1.8e18");
  MATCHES(m, "Timestamp < 99999999999999999999"); /* past int64: a double */
  MATCHES(m, "Timestamp > -99999999999999999999");
  MATCHES(m, "Severity < 4.5");
  MATCHES(m, "Severity > 3.5");
  MATCHES(m, "Severity == 4.0");
  MATCHES(m, "Severity == 0.4e1");
  REJECTS(m, "Severity == 4.5");
  MATCHES(m, "Severity != 4.5");
  REJECTS(m, "Severity <= 3.9");
  REJECTS(m, "Severity >= 4.1");
  MATCHES(m, "Severity > -1");
  MATCHES(m, "Severity > -1e300 && Severity < 1e300");
  MATCHES(m, "Pid == 1.234e3");
  MATCHES(m, "Pid == 1234E0");
  MATCHES(m, "Pid == 123400e-2");
  REJECTS(m, "Pid < 12.34e+2");
  MATCHES(m, "Fields[big] == 9007199254740993");
  REJECTS(m, "Fields[big] == 9007199254740992");
  MATCHES(m, "Fields[big] > 9007199254740992.0");
  REJECTS(m, "Fields[bigreal] == 9007199254740993");
  MATCHES(m, "Fields[bigreal] < 9007199254740993");
  MATCHES(m, "Fields[bigreal] == 9007199254740992");
}

static void test_absent_headers(void)
{
  msg m;

  msg_init(&m);
  MATCHES(&m, "Type == '' && Logger == '' && Payload == ''");
  MATCHES(&m, "EnvVersion == \"\" && Hostname == \"\" && Uuid == ''");
  MATCHES(&m, "Type =~ /^$/ && Uuid !~ /./");
  REJECTS(&m, "Type < ''");
  MATCHES(&m, "Severity == 7"); /* Heka's default */
  MATCHES(&m, "Pid == 0 && Timestamp == 0");
  MATCHES(&m, "Fields[anything] == NIL");
  REJECTS(&m, "Fields[anything] != NIL");
  m.severity = 3; /* not set: has_severity is false */
  MATCHES(&m, "Severity == 7");
  m.has_severity = true;
  MATCHES(&m, "Severity == 3");
  m.severity = 0;
  MATCHES(&m, "Severity == 0");
  msg_free(&m);
}

/* --- fields ------------------------------------------------------------- */

static void test_string_fields(const msg *m)
{
  MATCHES(m, "Fields[programname] == 'jls'");
  MATCHES(m, "Fields[programname] == \"jls\"");
  REJECTS(m, "Fields[programname] != 'jls'");
  MATCHES(m, "Fields[programname] < 'jlt'");
  MATCHES(m, "Fields[programname] <= 'jls'");
  MATCHES(m, "Fields[programname] > 'jl'");
  REJECTS(m, "Fields[programname] >= 'k'");
  MATCHES(m, "Fields[programname] =~ /^j/");
  REJECTS(m, "Fields[programname] !~ /^j/");
  MATCHES(m, "Fields[programname] == \"\\x6als\"");
  MATCHES(m, "Fields[empty] == '' && Fields[empty] =~ /^$/");
  MATCHES(m, "Fields[empty] != NIL");
  MATCHES(m, "Fields[ two words ] == 'yes'");
  MATCHES(m, "Fields[quote] == \"say \\\"hi\\\"\\n\\tit's C:\\\\dir\"");
  MATCHES(m, "Fields[quote] == 'say \"hi\"\\n\\tit\\'s C:\\\\dir'");
}

static void test_bytes_fields(const msg *m)
{
  MATCHES(m, "Fields[blob] == 'a\\x00b'");
  REJECTS(m, "Fields[blob] == 'a'");
  MATCHES(m, "Fields[blob] > 'a'");
  MATCHES(m, "Fields[blob] < 'a\\x01'");
  MATCHES(m, "Fields[blob] =~ /^a/");
  MATCHES(m, "Fields[blob] =~ /b$/"); /* the regex reads past the NUL */
  REJECTS(m, "Fields[blob] !~ /b$/");
}

static void test_number_fields(const msg *m)
{
  MATCHES(m, "Fields[count] == 42");
  MATCHES(m, "Fields[count] == 42.0");
  REJECTS(m, "Fields[count] != 42");
  MATCHES(m, "Fields[count] < 42.5");
  MATCHES(m, "Fields[count] <= 42");
  MATCHES(m, "Fields[count] > 41.9");
  REJECTS(m, "Fields[count] >= 43");
  MATCHES(m, "Fields[negative] == -5 && Fields[negative] < -4.5");
  MATCHES(m, "Fields[ratio] == 0.5");
  MATCHES(m, "Fields[ratio] == 5e-1");
  REJECTS(m, "Fields[ratio] != 0.5");
  MATCHES(m, "Fields[ratio] < 1");
  MATCHES(m, "Fields[ratio] <= 0.5");
  MATCHES(m, "Fields[ratio] > 0");
  REJECTS(m, "Fields[ratio] >= 0.51");
  /* NaN is unordered: only != holds. */
  REJECTS(m, "Fields[nan] == 0");
  MATCHES(m, "Fields[nan] != 0");
  MATCHES(m, "Fields[nan] != 0.5");
  REJECTS(m, "Fields[nan] < 0");
  REJECTS(m, "Fields[nan] <= 0");
  REJECTS(m, "Fields[nan] > 0");
  REJECTS(m, "Fields[nan] >= 0");
}

static void test_bool_fields(const msg *m)
{
  MATCHES(m, "Fields[ok] == TRUE");
  REJECTS(m, "Fields[ok] == FALSE");
  MATCHES(m, "Fields[ok] != FALSE");
  REJECTS(m, "Fields[ok] != TRUE");
  MATCHES(m, "Fields[off] == FALSE");
  MATCHES(m, "Fields[off] != TRUE");
}

static void test_cross_kind_is_false(const msg *m)
{
  REJECTS(m, "Fields[programname] == 42");
  REJECTS(m, "Fields[programname] != 42");
  REJECTS(m, "Fields[programname] == TRUE");
  REJECTS(m, "Fields[programname] != TRUE");
  REJECTS(m, "Fields[count] == '42'");
  REJECTS(m, "Fields[count] != '42'");
  REJECTS(m, "Fields[count] =~ /4/");
  REJECTS(m, "Fields[count] !~ /4/");
  REJECTS(m, "Fields[count] == TRUE");
  REJECTS(m, "Fields[ratio] != '0.5'");
  REJECTS(m, "Fields[ok] == 1");
  REJECTS(m, "Fields[ok] != 1");
  REJECTS(m, "Fields[ok] == 'true'");
  REJECTS(m, "Fields[ok] =~ /./");
}

static void test_nil(const msg *m)
{
  MATCHES(m, "Fields[missing] == NIL");
  REJECTS(m, "Fields[missing] != NIL");
  REJECTS(m, "Fields[programname] == NIL");
  MATCHES(m, "Fields[programname] != NIL");
  MATCHES(m, "Fields[off] != NIL"); /* FALSE is a value */
  /* Any other comparison with an absent value is false. */
  REJECTS(m, "Fields[missing] == 'x'");
  REJECTS(m, "Fields[missing] != 'x'");
  REJECTS(m, "Fields[missing] < 1");
  REJECTS(m, "Fields[missing] != FALSE");
  REJECTS(m, "Fields[missing] =~ /x/");
  REJECTS(m, "Fields[missing] !~ /x/");
}

static void test_indexes(const msg *m)
{
  MATCHES(m, "Fields[tags] == 'a'");
  MATCHES(m, "Fields[tags][0] == 'a'");
  MATCHES(m, "Fields[tags][0][0] == 'a'");
  MATCHES(m, "Fields[tags][0][1] == 'b'");
  MATCHES(m, "Fields[tags][0][2] == 'c'");
  MATCHES(m, "Fields[tags][0][3] == NIL");
  REJECTS(m, "Fields[tags][0][3] != 'c'");
  MATCHES(m, "Fields[tags][1] == 'x'");
  MATCHES(m, "Fields[tags][1][0] == 'x'");
  MATCHES(m, "Fields[tags][1][1] == NIL");
  MATCHES(m, "Fields[tags][2] == NIL");
  REJECTS(m, "Fields[tags][2] != NIL");
  MATCHES(m, "Fields[codes][0][1] == 404");
  MATCHES(m, "Fields[codes][0][1] > 400 && Fields[codes][0][0] < 300");
  MATCHES(m, "Fields[codes][0][4294967295] == NIL");
  MATCHES(m, "  Fields [ codes ] [ 0 ] [ 1 ]  ==  404  ");
}

/* --- regexes, logic, whitespace ------------------------------------------ */

static void test_regexes(const msg *m)
{
  MATCHES(m, "Payload =~ /^foo (bar|baz) [0-9]+$/");
  REJECTS(m, "Payload =~ /bar{2}/");
  MATCHES(m, "Payload =~ /o{2}/");
  MATCHES(m, "Hostname =~ /^sn.ck$/");
  REJECTS(m, "Type =~ /SYSLOG/");
  MATCHES(m, "EnvVersion =~ /^1\\.0$/");
  REJECTS(m, "Logger =~ /^input\\.stdi$/");
  MATCHES(m, "Logger =~ /[[:alpha:]]+\\.[[:alpha:]]+/");
  MATCHES(m, "Fields[url] =~ /^\\/api\\/v[0-9]$/");
  MATCHES(m, "Fields[quote] =~ /C:\\\\dir$/");
  MATCHES(m, "Uuid =~ /^[0-9a-f]{8}-/");
  MATCHES(m, "Payload =~ //"); /* the empty pattern matches anything */
}

/* PCRE2 in UTF-8 mode with RE2's '$' (matcher_regex.h). */
static void test_regex_dialect(void)
{
  msg m;

  msg_init(&m);
  set_string(&m, &m.payload, "caf\xc3\xa9 took 12ms\n");
  add_bytes(&m, "raw", MSG_BYTES, "\xff\xfeok", 4);
  MATCHES(&m, "Payload =~ /^caf.\\s/");      /* '.' is one character, not a byte */
  MATCHES(&m, "Payload =~ /caf[\xc3\xa8\xc3\xa9]/"); /* classes of characters */
  MATCHES(&m, "Payload =~ /\\d+ms\\n$/");
  REJECTS(&m, "Payload =~ /ms$/");   /* '$' is the end only, not before a '\n' */
  MATCHES(&m, "Payload =~ /(?i)CAF/"); /* inline flags */
  MATCHES(&m, "Payload =~ /(?m)ms$/");
  MATCHES(&m, "Payload =~ /\\btook\\b/");
  MATCHES(&m, "Fields[raw] =~ /ok$/");   /* invalid UTF-8 before it is skipped */
  REJECTS(&m, "Fields[raw] =~ /^.ok/");  /* and matches nothing */
  COMPILE_ERROR_PREFIX("Payload =~ /a\\C/", "column 12: invalid regex: ");
  msg_free(&m);
}

/* A pattern that backtracks exponentially ends at PCRE2's match limit: =~
 * and !~ are both false (and the regex logs it once). */
static void test_regex_limits(void)
{
  char payload[4097], err[256];
  matcher *is, *is_not, *both;
  msg m;

  memset(payload, 'a', sizeof payload - 2);
  payload[sizeof payload - 2] = 'b';
  payload[sizeof payload - 1] = '\0';
  msg_init(&m);
  set_string(&m, &m.payload, payload);
  is = matcher_compile("Payload =~ /^(a+)+$/", err, sizeof err);
  is_not = matcher_compile("Payload !~ /^(a+)+$/", err, sizeof err);
  both = matcher_compile("Payload =~ /^(a|aa)+$/ || Payload =~ /a{4095}b/", err, sizeof err);
  CHECK(is && is_not && both);
  if (is && is_not && both) {
    CHECK(!matcher_eval(is, &m));
    CHECK(!matcher_eval(is_not, &m));
    CHECK(!matcher_eval(is_not, &m));
    /* The || goes on to its next test, which does match. */
    CHECK(matcher_eval(both, &m));
  }
  matcher_free(is);
  matcher_free(is_not);
  matcher_free(both);
  msg_free(&m);
}

static void test_logic(const msg *m)
{
  MATCHES(m, "TRUE");
  REJECTS(m, "FALSE");
  MATCHES(m, "  TRUE\t");
  MATCHES(m, "TRUE && TRUE");
  REJECTS(m, "TRUE && FALSE");
  REJECTS(m, "FALSE || FALSE");
  MATCHES(m, "FALSE || TRUE");
  /* && binds tighter than ||. */
  MATCHES(m, "TRUE || FALSE && FALSE");
  MATCHES(m, "FALSE && FALSE || TRUE");
  REJECTS(m, "(TRUE || FALSE) && FALSE");
  REJECTS(m, "FALSE && (FALSE || TRUE)");
  MATCHES(m, "Type == 'x' || Severity == 4 && Pid == 1234");
  REJECTS(m, "(Type == 'x' || Severity == 4) && Pid == 1");
  MATCHES(m, "Type == 'syslog' && (Severity == 1 || Severity == 4)");
  MATCHES(m, "(Type == 'x' || Type == 'syslog') && (Pid == 1 || Pid == 1234)");
  REJECTS(m, "(Type == 'x' || Type == 'syslog') && (Pid == 1 || Pid == 2)");
  MATCHES(m, "(Type == 'x' && Pid == 1) || (Type == 'syslog' && Pid == 1234)");
  MATCHES(m, "((((TRUE))))");
  MATCHES(m, "((FALSE || (TRUE && (Pid == 1234))))");
  REJECTS(m, "((FALSE || (TRUE && (Pid == 1235))))");
  MATCHES(m, "Type\t==\n'syslog'&&Severity<5");
  MATCHES(m, "Type == \"syslog\" && Severity < 5");
}

static void test_long_expressions(const msg *m)
{
  static char e[MATCHER_MAX_LENGTH + 2];
  size_t n = 0;
  matcher *mt;

  /* 251 alternatives, the last one true. */
  for (int k = 1; k <= 250; k++)
    n += (size_t)snprintf(e + n, sizeof e - n, "Pid == %d || ", k);
  snprintf(e + n, sizeof e - n, "Pid == 1234");
  MATCHES(m, e);
  /* 251 conjuncts: all true, then the last one false. */
  n = 0;
  for (int k = 1; k <= 250; k++)
    n += (size_t)snprintf(e + n, sizeof e - n, "Pid != %d && ", k);
  snprintf(e + n, sizeof e - n, "Pid == 1234");
  MATCHES(m, e);
  snprintf(e + n, sizeof e - n, "Pid == 1");
  REJECTS(m, e);

  /* MATCHER_MAX_DEPTH parentheses compile. */
  n = 0;
  for (int k = 0; k < MATCHER_MAX_DEPTH; k++) e[n++] = '(';
  memcpy(e + n, "TRUE", 4);
  n += 4;
  for (int k = 0; k < MATCHER_MAX_DEPTH; k++) e[n++] = ')';
  e[n] = '\0';
  MATCHES(m, e);

  /* An expression of exactly MATCHER_MAX_LENGTH bytes compiles. */
  memset(e, ' ', MATCHER_MAX_LENGTH);
  memcpy(e, "TRUE", 4);
  e[MATCHER_MAX_LENGTH] = '\0';
  mt = matcher_compile(e, NULL, 0);
  CHECK(mt != NULL);
  matcher_free(mt);
}

static void test_reuse(const msg *sample)
{
  matcher *mt = matcher_compile("Type == 'syslog' && Fields[count] > 40", NULL, 0);
  msg m;

  CHECK(mt != NULL);
  if (!mt) return;
  CHECK(matcher_eval(mt, sample));
  msg_init(&m);
  CHECK(!matcher_eval(mt, &m));
  set_string(&m, &m.type, "syslog");
  CHECK(!matcher_eval(mt, &m));
  add_integers(&m, "count", (const int64_t[]){ 41 }, 1);
  CHECK(matcher_eval(mt, &m));
  msg_reset(&m);
  CHECK(!matcher_eval(mt, &m));
  CHECK(matcher_eval(mt, sample)); /* evaluation leaves the matcher as it was */
  msg_free(&m);
  matcher_free(mt);
  matcher_free(NULL);
}

/* --- compile errors -------------------------------------------------------- */

static void test_syntax_errors(void)
{
  COMPILE_ERROR("", "column 1: expected a comparison, TRUE, FALSE or '('");
  COMPILE_ERROR("   ", "column 4: expected a comparison, TRUE, FALSE or '('");
  COMPILE_ERROR("Typo == 'x'", "column 1: unknown variable 'Typo'; expected a header "
                "name, Fields[name], TRUE, FALSE or '('");
  COMPILE_ERROR("type == 'x'", "column 1: unknown variable 'type'; expected a header "
                "name, Fields[name], TRUE, FALSE or '('");
  COMPILE_ERROR("Type", "column 5: expected an operator (== != < <= > >= =~ !~) "
                "after 'Type'");
  COMPILE_ERROR("Type = 'x'", "column 6: expected an operator (== != < <= > >= =~ !~) "
                "after 'Type'");
  COMPILE_ERROR("Type ==", "column 8: expected a value after '=='");
  COMPILE_ERROR("Type == \"syslog\" && Severity <", "column 31: expected a value after '<'");
  COMPILE_ERROR("Type == TRUEX", "column 9: expected a value after '=='");
  COMPILE_ERROR("Type == 'x' junk", "column 13: expected '&&', '||' or the end of the "
                "expression");
  COMPILE_ERROR("Type == 'x' & Pid == 1", "column 13: expected '&&', '||' or the end of "
                "the expression");
  COMPILE_ERROR("Type == 'x')", "column 12: expected '&&', '||' or the end of the "
                "expression");
  COMPILE_ERROR("TRUE == TRUE", "column 6: expected '&&', '||' or the end of the "
                "expression");
  COMPILE_ERROR("Type =~ /x/i", "column 12: expected '&&', '||' or the end of the "
                "expression");
  COMPILE_ERROR("(Type == 'x'", "column 13: expected '&&', '||' or ')' to close the '(' "
                "at column 1");
  COMPILE_ERROR("TRUE && (FALSE || )", "column 19: expected a comparison, TRUE, FALSE "
                "or '('");
  COMPILE_ERROR("Type == 'x' &&", "column 15: expected a comparison, TRUE, FALSE or '('");
  COMPILE_ERROR("&& TRUE", "column 1: expected a comparison, TRUE, FALSE or '('");
  COMPILE_ERROR("Pid == 1 || || Pid == 2", "column 13: expected a comparison, TRUE, "
                "FALSE or '('");
}

static void test_literal_errors(void)
{
  COMPILE_ERROR("Type == 'abc", "column 9: unterminated string; expected a closing "
                "quote (')");
  COMPILE_ERROR("Type == \"abc'", "column 9: unterminated string; expected a closing "
                "quote (\")");
  COMPILE_ERROR("Type == 'abc\\", "column 9: unterminated string; expected a closing "
                "quote (')");
  COMPILE_ERROR("Type == 'a\\q'", "column 11: unknown escape '\\q'");
  COMPILE_ERROR("Type == 'a\\\n'", "column 11: unknown escape: '\\' before byte 0x0a");
  COMPILE_ERROR("Type == 'a\\x4'", "column 11: expected two hex digits after '\\x'");
  COMPILE_ERROR("Type =~ /abc", "column 9: unterminated regex; expected a closing '/'");
  COMPILE_ERROR("Type =~ /abc\\/", "column 9: unterminated regex; expected a closing '/'");
  COMPILE_ERROR_PREFIX("Type =~ /a(/", "column 9: invalid regex: ");
  COMPILE_ERROR_PREFIX("Payload !~ /[z-a]/", "column 12: invalid regex: ");
  COMPILE_ERROR("Severity == -x", "column 14: expected a digit after '-'");
  COMPILE_ERROR("Severity == 1.", "column 15: expected a digit after '.'");
  COMPILE_ERROR("Severity == 1e", "column 15: expected a digit in the exponent");
  COMPILE_ERROR("Severity == 1e+", "column 16: expected a digit in the exponent");
  COMPILE_ERROR("Severity == 1e999", "column 13: number out of range");
  COMPILE_ERROR("Severity == -1e999", "column 13: number out of range");
  COMPILE_ERROR("Severity == 00000000000000000000000000000000000000000000000000000000"
                "000000001", "column 13: number longer than 64 characters");
  COMPILE_ERROR("Severity == 5abc", "column 14: expected '&&', '||' or the end of the "
                "expression");
}

static void test_field_errors(void)
{
  COMPILE_ERROR("Fields == 1", "column 8: expected '[' after 'Fields'");
  COMPILE_ERROR("Fields[foo", "column 11: expected ']' to close 'Fields['");
  COMPILE_ERROR("Fields[foo == 1", "column 16: expected ']' to close 'Fields['");
  COMPILE_ERROR("Fields[] == 1", "column 8: expected a field name after 'Fields['");
  COMPILE_ERROR("Fields[a\tb] == 1", "column 9: control character in a field name");
  COMPILE_ERROR("Fields[  ] == 1", "column 8: expected a field name after 'Fields['");
  COMPILE_ERROR("Fields[foo][x] == 1", "column 13: expected the field index (a "
                "non-negative integer)");
  COMPILE_ERROR("Fields[foo][0][-1] == 1", "column 16: expected the array index (a "
                "non-negative integer)");
  COMPILE_ERROR("Fields[foo][0 == 1", "column 15: expected ']' after the field index");
  COMPILE_ERROR("Fields[foo][0][1", "column 17: expected ']' after the array index");
  COMPILE_ERROR("Fields[foo][4294967296] == 1", "column 13: field index larger than "
                "4294967295");
  COMPILE_ERROR("Fields[foo][0][0][0] == 1", "column 18: expected an operator (== != < "
                "<= > >= =~ !~) after 'Fields[foo][0][0]'");
  COMPILE_ERROR("Fields[foo] ", "column 13: expected an operator (== != < <= > >= =~ "
                "!~) after 'Fields[foo]'");
}

static void test_type_errors(void)
{
  COMPILE_ERROR("Severity =~ /x/", "column 10: '=~' needs a string variable, but "
                "Severity is a number");
  COMPILE_ERROR("Pid !~ /x/", "column 5: '!~' needs a string variable, but Pid is a "
                "number");
  COMPILE_ERROR("Timestamp =~ 'x'", "column 11: '=~' needs a string variable, but "
                "Timestamp is a number");
  COMPILE_ERROR("Type == /x/", "column 9: a regex needs '=~' or '!~', not '=='");
  COMPILE_ERROR("Fields[a] < /x/", "column 13: a regex needs '=~' or '!~', not '<'");
  COMPILE_ERROR("Type =~ 'x'", "column 9: expected a regex /.../ after '=~'");
  COMPILE_ERROR("Fields[a] !~ 5", "column 14: expected a regex /.../ after '!~'");
  COMPILE_ERROR("Type == 5", "column 9: expected a string after '==' (Type is a string)");
  COMPILE_ERROR("Uuid != TRUE", "column 9: expected a string after '!=' (Uuid is a "
                "string)");
  COMPILE_ERROR("Severity == 'x'", "column 13: expected a number after '==' (Severity is "
                "a number)");
  COMPILE_ERROR("Timestamp > TRUE", "column 13: expected a number after '>' (Timestamp "
                "is a number)");
  COMPILE_ERROR("Hostname == NIL", "column 13: NIL compares only with Fields[...]; "
                "Hostname always has a value");
  COMPILE_ERROR("Pid != NIL", "column 8: NIL compares only with Fields[...]; Pid always "
                "has a value");
  COMPILE_ERROR("Fields[a] < NIL", "column 13: NIL compares only with '==' or '!='");
  COMPILE_ERROR("Fields[a] >= TRUE", "column 14: TRUE compares only with '==' or '!='");
  COMPILE_ERROR("Fields[a] <= FALSE", "column 14: FALSE compares only with '==' or '!='");
}

static void test_limits(void)
{
  static char e[MATCHER_MAX_LENGTH + 2];
  char err[64], tiny[8];
  size_t n = 0;

  for (int k = 0; k <= MATCHER_MAX_DEPTH; k++) e[n++] = '(';
  memcpy(e + n, "TRUE", 5);
  COMPILE_ERROR(e, "column 65: parentheses nested deeper than 64");

  memset(e, ' ', MATCHER_MAX_LENGTH + 1);
  memcpy(e, "TRUE", 4);
  e[MATCHER_MAX_LENGTH + 1] = '\0';
  COMPILE_ERROR(e, "column 4097: expression longer than 4096 bytes");

  /* The error buffer is never overrun, and may be absent. */
  memset(tiny, 'z', sizeof tiny);
  CHECK(matcher_compile("Type ==", tiny, 4) == NULL);
  CHECK(strcmp(tiny, "col") == 0 && tiny[4] == 'z');
  CHECK(matcher_compile("Type ==", tiny, 0) == NULL && tiny[0] == 'c');
  CHECK(matcher_compile("Type ==", NULL, 0) == NULL);
  CHECK(matcher_compile("Type ==", err, sizeof err) == NULL &&
        strcmp(err, "column 8: expected a value after '=='") == 0);
}

int main(void)
{
  msg sample;

  build_sample(&sample);
  test_string_headers(&sample);
  test_number_headers(&sample);
  test_numbers_compare_exactly(&sample);
  test_absent_headers();
  test_string_fields(&sample);
  test_bytes_fields(&sample);
  test_number_fields(&sample);
  test_bool_fields(&sample);
  test_cross_kind_is_false(&sample);
  test_nil(&sample);
  test_indexes(&sample);
  test_regexes(&sample);
  test_regex_dialect();
  test_regex_limits();
  test_logic(&sample);
  test_long_expressions(&sample);
  test_reuse(&sample);
  test_constant();
  test_syntax_errors();
  test_literal_errors();
  test_field_errors();
  test_type_errors();
  test_limits();
  msg_free(&sample);

  return check_summary();
}
