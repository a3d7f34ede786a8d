/*
 * matcher.c - compiles a Heka message-matcher expression into a flat array of
 * tests wired as a decision graph, and runs that graph against a msg.
 *
 * Grammar (whitespace may stand between any two tokens):
 *
 *   expression := and_expr ( '||' and_expr )*
 *   and_expr   := primary ( '&&' primary )*          (&& binds tighter)
 *   primary    := '(' expression ')' | 'TRUE' | 'FALSE' | comparison
 *   comparison := variable operator value
 *   variable   := 'Uuid' | 'Type' | 'Logger' | 'Payload' | 'EnvVersion'
 *               | 'Hostname' | 'Timestamp' | 'Severity' | 'Pid'
 *               | 'Fields' '[' name ']' ( '[' index ']' ( '[' index ']' )? )?
 *   operator   := '==' | '!=' | '<' | '<=' | '>' | '>=' | '=~' | '!~'
 *   value      := string | number | regex | 'TRUE' | 'FALSE' | 'NIL'
 *   string     := '"' chars '"' | "'" chars "'"
 *                 escapes: \\ \" \' \n \r \t \xHH
 *   number     := '-'? digits ( '.' digits )? ( [eE] [+-]? digits )?
 *   regex      := '/' chars '/'   PCRE2 syntax (matcher_regex.h); \/ stands
 *                 for '/', other escapes reach PCRE2 unchanged
 *   name       := any bytes but ']' and control characters, surrounding
 *                 whitespace trimmed
 *   index      := digits, 0-based: the field index (the fi-th field of that
 *                 name), then the array index; both default to 0
 *
 * What compares with what is settled at compile time where it can be:
 *   - Type, Logger, Payload, EnvVersion, Hostname and Uuid take strings
 *     (bytewise, a prefix sorts first) and regexes. An absent string header
 *     is the empty string (Heka). Uuid reads as its 36-character lowercase
 *     text ("6ba7b810-9dad-11d1-80b4-00c04fd430c8"), or "" when absent.
 *   - Timestamp (int64 nanoseconds), Severity and Pid take numbers. Absent
 *     Severity reads 7 and absent Pid 0: Heka's protobuf defaults.
 *   - NIL compares only with Fields: headers are never NIL, since an absent
 *     header reads as its default; test `Hostname == ""` instead.
 *   - TRUE, FALSE and NIL take only == and !=; regexes take only =~ and !~,
 *     and =~ and !~ take only regexes.
 *   - A field's kind is known only per message, so a comparison between
 *     kinds that do not go together is false, for every operator including
 *     != (Heka): strings and regexes go with STRING and BYTES values, numbers
 *     with INTEGER and DOUBLE, TRUE/FALSE with BOOL. So is any comparison
 *     with a value that is absent (no such field, or the index is past the
 *     array), except `== NIL`. `Fields[n] != "x"` is false when n is absent
 *     or numeric.
 * Numbers compare exactly: an integral literal that fits int64 is kept as an
 * int64 and compares with integer values as integers; other literals are
 * doubles, and an int64 compares with a double by value, never by rounding
 * the int64 to a double. A NaN field value is unordered: only != holds.
 * Literals are parsed with strtod(), which assumes the C locale's '.'.
 *
 * Layout: every comparison, and every bare TRUE or FALSE, becomes one test in
 * a flat array, in source order. A test holds what it compares (a header id,
 * or a field name with its precomputed length and indexes), the operator, the
 * literal (unescaped string, int64, double, bool or compiled regex), and
 * two jump targets: the next test to run when it holds and when it does not.
 * The targets ACCEPT (= ntests) and REJECT (= ntests + 1) end evaluation.
 * `A && (B || C)` becomes
 *     0: A   holds -> 1        fails -> REJECT
 *     1: B   holds -> ACCEPT   fails -> 2
 *     2: C   holds -> ACCEPT   fails -> REJECT
 * Why: evaluation is one loop that follows jumps: no recursion, no value
 * stack, no allocation of its own, short-circuit by construction, and the tests sit
 * next to each other in memory. Targets only point forward, so the loop ends
 * after at most ntests steps.
 *
 * The parser is recursive descent and sets the targets by back-patching: a
 * new test leaves both exits PENDING; after the left operand of '&&' the
 * pending "holds" exits of that operand's tests are pointed at the first
 * test of the right operand, after the left operand of '||' its pending
 * "fails" exits are; at the end whatever is still pending goes to ACCEPT or
 * REJECT. Expressions are at most MATCHER_MAX_LENGTH bytes and
 * MATCHER_MAX_DEPTH parentheses deep, so this quadratic-at-worst patching
 * and the recursion stay small.
 */
#include "matcher.h"
#include "matcher_regex.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HEKA_DEFAULT_SEVERITY = 7 };
enum { UUID_TEXT_LENGTH = 36 };
enum { NUMBER_MAX_LENGTH = 64 }; /* longest numeric literal, in bytes */

/* Jump targets not yet known while parsing. */
#define PENDING_HOLDS UINT32_MAX
#define PENDING_FAILS (UINT32_MAX - 1)

typedef enum {
  OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_MATCH, OP_NOT_MATCH, OP_COUNT
} op_kind;

static const char *const op_text[OP_COUNT] = {
  "==", "!=", "<", "<=", ">", ">=", "=~", "!~"
};

/* How two values order; a NaN is UNORDERED with anything. */
enum { LESS = -1, EQUAL = 0, GREATER = 1, UNORDERED = 2 };
#define ORDER_BIT(order) (1u << ((order) + 1))

/* For each operator, the orders for which it holds. */
static const uint8_t op_accepts[OP_COUNT] = {
  [OP_EQ] = ORDER_BIT(EQUAL),
  [OP_NE] = ORDER_BIT(LESS) | ORDER_BIT(GREATER) | ORDER_BIT(UNORDERED),
  [OP_LT] = ORDER_BIT(LESS),
  [OP_LE] = ORDER_BIT(LESS) | ORDER_BIT(EQUAL),
  [OP_GT] = ORDER_BIT(GREATER),
  [OP_GE] = ORDER_BIT(GREATER) | ORDER_BIT(EQUAL),
};

typedef enum {
  SUBJECT_CONSTANT,      /* a bare TRUE or FALSE */
  SUBJECT_STRING_HEADER, /* Type, Logger, Payload, EnvVersion, Hostname */
  SUBJECT_UUID,
  SUBJECT_NUMBER_HEADER, /* Timestamp, Severity, Pid */
  SUBJECT_FIELD
} subject_kind;

typedef enum {
  VALUE_STRING, VALUE_REGEX, VALUE_INTEGER, VALUE_REAL, VALUE_BOOL, VALUE_NIL
} value_kind;

/* Bytes that need not be NUL-terminated. */
typedef struct {
  const char *ptr;
  uint32_t len;
} strview;

typedef struct {
  uint8_t subject;    /* subject_kind */
  uint8_t header;     /* msg_header, for the header subjects */
  uint8_t op;         /* op_kind */
  uint8_t value_kind; /* value_kind */
  uint8_t accepts;    /* op_accepts[op]: ORDER_BIT()s for which op holds */
  uint32_t on_holds, on_fails; /* next test, ACCEPT or REJECT */
  strview field_name;          /* SUBJECT_FIELD: Fields[field_name] */
  uint32_t field_index, array_index; /* [field_index][array_index] */
  union {
    strview string;
    int64_t integer;
    double real;
    bool boolean; /* VALUE_BOOL, and the result of SUBJECT_CONSTANT */
    matcher_regex *regex;
  } value;
} test;

struct matcher {
  test *tests;
  uint32_t ntests;
  char *pool; /* field names and string literals, unescaped */
};

/* ------------------------------------------------------------------------
 * Evaluation
 * ------------------------------------------------------------------------ */

static bool holds(const test *t, int order)
{
  return (t->accepts & ORDER_BIT(order)) != 0;
}

static strview span_view(const msg *m, msg_span s)
{
  strview v = { s.len ? msg_str(m, s) : "", s.len };
  return v;
}

static strview string_header(const msg *m, msg_header h)
{
  switch (h) {
  case MSG_H_TYPE: return span_view(m, m->type);
  case MSG_H_LOGGER: return span_view(m, m->logger);
  case MSG_H_PAYLOAD: return span_view(m, m->payload);
  case MSG_H_ENV_VERSION: return span_view(m, m->env_version);
  default: return span_view(m, m->hostname); /* the parser admits no other */
  }
}

static int64_t number_header(const msg *m, msg_header h)
{
  switch (h) {
  case MSG_H_TIMESTAMP: return m->timestamp;
  case MSG_H_SEVERITY: return m->has_severity ? m->severity : HEKA_DEFAULT_SEVERITY;
  default: return m->has_pid ? m->pid : 0; /* MSG_H_PID */
  }
}

static int compare_bytes(strview a, strview b)
{
  uint32_t n = a.len < b.len ? a.len : b.len;
  int c = n ? memcmp(a.ptr, b.ptr, n) : 0;

  if (c) return c < 0 ? LESS : GREATER;
  return a.len < b.len ? LESS : a.len > b.len ? GREATER : EQUAL;
}

/* A string test: the literal is a string or a regex. A regex that hit a
 * limit (matcher_regex.h) answers neither =~ nor !~: the test is false, as
 * for a value of the wrong kind (and the regex logs it, once). */
static bool test_string(const test *t, strview s)
{
  strview lit;

  if (t->value_kind == VALUE_REGEX) {
    matcher_regex_result r = matcher_regex_match(t->value.regex, s.ptr, s.len);
    return r != MATCHER_REGEX_FAILED && (r == MATCHER_REGEX_MATCH) == (t->op == OP_MATCH);
  }
  lit = t->value.string;
  if (t->op == OP_EQ || t->op == OP_NE) {
    bool equal = s.len == lit.len && (!s.len || memcmp(s.ptr, lit.ptr, s.len) == 0);
    return equal == (t->op == OP_EQ);
  }
  return holds(t, compare_bytes(s, lit));
}

/* Uuid compares as its text. Not inlined, so that the buffer (and the stack
 * protector's check that a char array brings) stays out of the hot loop. */
static __attribute__((noinline)) bool test_uuid(const test *t, const msg *m)
{
  static const char hex[] = "0123456789abcdef";
  char text[UUID_TEXT_LENGTH];
  strview v = { text, 0 };

  if (!m->has_uuid) return test_string(t, (strview){ "", 0 });
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text[v.len++] = '-';
    text[v.len++] = hex[m->uuid[i] >> 4];
    text[v.len++] = hex[m->uuid[i] & 15];
  }
  return test_string(t, v);
}

static int compare_reals(double a, double b)
{
  return a < b ? LESS : a > b ? GREATER : a == b ? EQUAL : UNORDERED;
}

/* Orders i against d by value. Within int64's range, i is compared with d's
 * integral part, then d's fraction breaks a tie; d - trunc(d) is exact there
 * (|d| >= 2^53 has no fraction at all). */
static int compare_int_real(int64_t i, double d)
{
  int64_t whole;
  double fraction;

  if (isnan(d)) return UNORDERED;
  if (d >= 0x1p63) return LESS;
  if (d < -0x1p63) return GREATER;
  whole = (int64_t)d;
  if (i != whole) return i < whole ? LESS : GREATER;
  fraction = d - (double)whole;
  return fraction > 0 ? LESS : fraction < 0 ? GREATER : EQUAL;
}

static int reverse_order(int order)
{
  return order == UNORDERED ? UNORDERED : -order;
}

/* Orders an integer value against the test's numeric literal. */
static int order_integer(int64_t v, const test *t)
{
  int64_t lit = t->value.integer;

  if (t->value_kind == VALUE_REAL) return compare_int_real(v, t->value.real);
  return v < lit ? LESS : v > lit ? GREATER : EQUAL;
}

/* Orders a double value against the test's numeric literal. */
static int order_real(double v, const test *t)
{
  if (t->value_kind == VALUE_REAL) return compare_reals(v, t->value.real);
  return reverse_order(compare_int_real(t->value.integer, v));
}

static bool is_number(const test *t)
{
  return t->value_kind == VALUE_INTEGER || t->value_kind == VALUE_REAL;
}

static bool test_field(const test *t, const msg *m)
{
  const msg_field *f = msg_find_field(m, t->field_name.ptr, t->field_name.len,
                                      t->field_index);
  const msg_value *v = f && t->array_index < f->count
                           ? msg_field_values(m, f) + t->array_index
                           : NULL;

  if (t->value_kind == VALUE_NIL) return (v == NULL) == (t->op == OP_EQ);
  if (!v) return false;
  switch (f->type) {
  case MSG_STRING:
  case MSG_BYTES:
    return (t->value_kind == VALUE_STRING || t->value_kind == VALUE_REGEX) &&
           test_string(t, span_view(m, v->s));
  case MSG_INTEGER:
    return is_number(t) && holds(t, order_integer(v->i, t));
  case MSG_DOUBLE:
    return is_number(t) && holds(t, order_real(v->d, t));
  case MSG_BOOL:
    return t->value_kind == VALUE_BOOL &&
           (v->b == t->value.boolean) == (t->op == OP_EQ);
  }
  return false;
}

static bool run_test(const test *t, const msg *m)
{
  switch (t->subject) {
  case SUBJECT_CONSTANT: return t->value.boolean;
  case SUBJECT_STRING_HEADER: return test_string(t, string_header(m, t->header));
  case SUBJECT_UUID: return test_uuid(t, m);
  case SUBJECT_NUMBER_HEADER:
    return holds(t, order_integer(number_header(m, t->header), t));
  }
  return test_field(t, m);
}

bool matcher_eval(const matcher *mt, const msg *m)
{
  uint32_t i = 0;

  while (i < mt->ntests) {
    const test *t = &mt->tests[i];
    i = run_test(t, m) ? t->on_holds : t->on_fails;
  }
  return i == mt->ntests; /* ACCEPT; REJECT is ntests + 1 */
}

bool matcher_constant(const matcher *mt, bool *value)
{
  uint32_t i = 0;

  while (i < mt->ntests) {
    const test *t = &mt->tests[i];
    if (t->subject != SUBJECT_CONSTANT) return false;
    i = t->value.boolean ? t->on_holds : t->on_fails;
  }
  *value = i == mt->ntests;
  return true;
}

/* ------------------------------------------------------------------------
 * Compilation
 * ------------------------------------------------------------------------ */

typedef struct {
  const char *src;
  size_t pos;         /* byte offset of the next unread character */
  unsigned depth;     /* open parentheses */
  matcher *mt;
  uint32_t tests_cap;
  size_t pool_len;    /* the pool holds strlen(src) + 1 bytes: enough, since
                         no literal unescapes longer than its source text */
  char *err;
  size_t errlen;
} parser;

static bool fail(parser *p, size_t at, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* Writes "column N: ..." for byte offset `at`; returns false. */
static bool fail(parser *p, size_t at, const char *fmt, ...)
{
  va_list ap;
  int n;

  if (!p->err || !p->errlen) return false;
  n = snprintf(p->err, p->errlen, "column %zu: ", at + 1);
  if (n < 0 || (size_t)n >= p->errlen) return false;
  va_start(ap, fmt);
  vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return false;
}

static bool fail_out_of_memory(parser *p)
{
  if (p->err && p->errlen) snprintf(p->err, p->errlen, "out of memory");
  return false;
}

static void skip_space(parser *p)
{
  while (isspace((unsigned char)p->src[p->pos])) p->pos++;
}

/* Skips whitespace, then consumes `token` if it comes next. */
static bool accept(parser *p, const char *token)
{
  size_t n = strlen(token);

  skip_space(p);
  if (strncmp(p->src + p->pos, token, n) != 0) return false;
  p->pos += n;
  return true;
}

static size_t identifier_length(const char *s)
{
  size_t n = 0;

  if (!isalpha((unsigned char)s[0]) && s[0] != '_') return 0;
  while (isalnum((unsigned char)s[n]) || s[n] == '_') n++;
  return n;
}

static bool is_word(const char *s, size_t len, const char *word)
{
  return strlen(word) == len && memcmp(s, word, len) == 0;
}

static bool add_test(parser *p, test *t)
{
  matcher *mt = p->mt;

  if (mt->ntests == p->tests_cap) {
    uint32_t cap = p->tests_cap ? 2 * p->tests_cap : 8;
    test *tests = realloc(mt->tests, cap * sizeof *tests);
    if (!tests) {
      if (t->value_kind == VALUE_REGEX) matcher_regex_free(t->value.regex);
      return fail_out_of_memory(p);
    }
    mt->tests = tests;
    p->tests_cap = cap;
  }
  t->on_holds = PENDING_HOLDS;
  t->on_fails = PENDING_FAILS;
  mt->tests[mt->ntests++] = *t;
  return true;
}

/* Points the exits still `pending` among tests first.. at `target`. */
static void patch_exits(matcher *mt, uint32_t first, uint32_t pending,
                        uint32_t target)
{
  for (uint32_t i = first; i < mt->ntests; i++) {
    if (mt->tests[i].on_holds == pending) mt->tests[i].on_holds = target;
    if (mt->tests[i].on_fails == pending) mt->tests[i].on_fails = target;
  }
}

/* Parses a 0-based index inside [ ]; the '[' is consumed. */
static bool parse_index(parser *p, const char *what, uint32_t *out)
{
  uint64_t v = 0;
  size_t at;

  skip_space(p);
  at = p->pos;
  if (!isdigit((unsigned char)p->src[at]))
    return fail(p, at, "expected the %s (a non-negative integer)", what);
  while (isdigit((unsigned char)p->src[p->pos])) {
    v = v * 10 + (uint64_t)(p->src[p->pos++] - '0');
    if (v > UINT32_MAX) return fail(p, at, "%s larger than %u", what, UINT32_MAX);
  }
  if (!accept(p, "]")) return fail(p, p->pos, "expected ']' after the %s", what);
  *out = (uint32_t)v;
  return true;
}

/* Parses "[name]" with up to two "[index]" after "Fields". */
static bool parse_field_ref(parser *p, test *t)
{
  const char *close, *name, *name_end;

  skip_space(p);
  if (p->src[p->pos] != '[') return fail(p, p->pos, "expected '[' after 'Fields'");
  name = p->src + ++p->pos;
  close = strchr(name, ']');
  if (!close) return fail(p, strlen(p->src), "expected ']' to close 'Fields['");
  for (name_end = close; name_end > name && isspace((unsigned char)name_end[-1]);)
    name_end--;
  while (name < name_end && isspace((unsigned char)*name)) name++;
  if (name == name_end) return fail(p, p->pos, "expected a field name after 'Fields['");
  for (const char *c = name; c < name_end; c++)
    if (iscntrl((unsigned char)*c))
      return fail(p, (size_t)(c - p->src), "control character in a field name");

  t->subject = SUBJECT_FIELD;
  t->field_name.ptr = memcpy(p->mt->pool + p->pool_len, name, (size_t)(name_end - name));
  t->field_name.len = (uint32_t)(name_end - name);
  p->pool_len += t->field_name.len;
  p->pos = (size_t)(close - p->src) + 1;
  if (!accept(p, "[")) return true;
  if (!parse_index(p, "field index", &t->field_index)) return false;
  if (!accept(p, "[")) return true;
  return parse_index(p, "array index", &t->array_index);
}

static subject_kind header_subject(msg_header h)
{
  switch (h) {
  case MSG_H_UUID: return SUBJECT_UUID;
  case MSG_H_TIMESTAMP:
  case MSG_H_SEVERITY:
  case MSG_H_PID: return SUBJECT_NUMBER_HEADER;
  default: return SUBJECT_STRING_HEADER;
  }
}

/* Consumes the longest operator at p->pos. */
static bool parse_operator(parser *p, uint8_t *op)
{
  size_t longest = 0;

  for (int k = 0; k < OP_COUNT; k++) {
    size_t n = strlen(op_text[k]);
    if (n > longest && strncmp(p->src + p->pos, op_text[k], n) == 0) {
      *op = (uint8_t)k;
      longest = n;
    }
  }
  p->pos += longest;
  return longest > 0;
}

/* The kind of value that starts at s, judged by its first character or word;
 * a number is reported as VALUE_INTEGER until parse_number() has read it. */
static bool classify_value(const char *s, value_kind *kind)
{
  size_t word_len = identifier_length(s);

  if (*s == '"' || *s == '\'') *kind = VALUE_STRING;
  else if (*s == '/') *kind = VALUE_REGEX;
  else if (*s == '-' || isdigit((unsigned char)*s)) *kind = VALUE_INTEGER;
  else if (is_word(s, word_len, "TRUE") || is_word(s, word_len, "FALSE")) *kind = VALUE_BOOL;
  else if (is_word(s, word_len, "NIL")) *kind = VALUE_NIL;
  else return false;
  return true;
}

/* Rejects a value of `kind` that cannot follow variable `var` and t->op. */
static bool check_pairing(parser *p, const test *t, value_kind kind,
                          strview var, size_t op_at, size_t value_at)
{
  const char *op = op_text[t->op];
  const bool regex_op = t->op == OP_MATCH || t->op == OP_NOT_MATCH;
  const bool equality_op = t->op == OP_EQ || t->op == OP_NE;
  const bool string_header = t->subject == SUBJECT_STRING_HEADER ||
                             t->subject == SUBJECT_UUID;
  const char *word = p->src + value_at;
  const int var_len = (int)var.len;

  if (regex_op && t->subject == SUBJECT_NUMBER_HEADER)
    return fail(p, op_at, "'%s' needs a string variable, but %.*s is a number",
                op, var_len, var.ptr);
  if (regex_op && kind != VALUE_REGEX)
    return fail(p, value_at, "expected a regex /.../ after '%s'", op);
  if (!regex_op && kind == VALUE_REGEX)
    return fail(p, value_at, "a regex needs '=~' or '!~', not '%s'", op);
  if (kind == VALUE_NIL && t->subject != SUBJECT_FIELD)
    return fail(p, value_at, "NIL compares only with Fields[...]; %.*s always has a value",
                var_len, var.ptr);
  if (string_header && kind != VALUE_STRING && kind != VALUE_REGEX)
    return fail(p, value_at, "expected a string after '%s' (%.*s is a string)",
                op, var_len, var.ptr);
  if (t->subject == SUBJECT_NUMBER_HEADER && kind != VALUE_INTEGER)
    return fail(p, value_at, "expected a number after '%s' (%.*s is a number)",
                op, var_len, var.ptr);
  if ((kind == VALUE_BOOL || kind == VALUE_NIL) && !equality_op)
    return fail(p, value_at, "%.*s compares only with '==' or '!='",
                (int)identifier_length(word), word);
  return true;
}

static int hex_digit(char c)
{
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes the escape whose backslash is at src[*i] into *out and moves *i
 * past it. */
static bool unescape(parser *p, size_t *i, char *out)
{
  const char *e = p->src + *i + 1;
  int high, low;

  switch (*e) {
  case 'n': *out = '\n'; break;
  case 'r': *out = '\r'; break;
  case 't': *out = '\t'; break;
  case '\\':
  case '"':
  case '\'': *out = *e; break;
  case 'x':
    high = hex_digit(e[1]);
    low = high < 0 ? -1 : hex_digit(e[2]);
    if (low < 0) return fail(p, *i, "expected two hex digits after '\\x'");
    *out = (char)(unsigned char)(high * 16 + low);
    *i += 4;
    return true;
  default:
    if (!isgraph((unsigned char)*e))
      return fail(p, *i, "unknown escape: '\\' before byte 0x%02x", (unsigned char)*e);
    return fail(p, *i, "unknown escape '\\%c'", *e);
  }
  *i += 2;
  return true;
}

/* Reads a quoted string, unescaped, into the pool. */
static bool parse_string(parser *p, strview *out)
{
  const char *s = p->src;
  const size_t at = p->pos;
  const char quote = s[at];
  char *dst = p->mt->pool + p->pool_len;
  uint32_t n = 0;
  size_t i = at + 1;

  while (s[i] != quote) {
    char c = s[i];
    if (c == '\0' || (c == '\\' && s[i + 1] == '\0'))
      return fail(p, at, "unterminated string; expected a closing quote (%c)", quote);
    if (c == '\\') {
      if (!unescape(p, &i, &c)) return false;
    } else {
      i++;
    }
    dst[n++] = c;
  }
  out->ptr = dst;
  out->len = n;
  p->pool_len += n;
  p->pos = i + 1;
  return true;
}

/* Reads /pattern/ and compiles it. The pattern is unescaped into the pool's
 * free tail as scratch: PCRE2 keeps its own copy. */
static bool parse_regex(parser *p, test *t)
{
  const char *s = p->src;
  const size_t at = p->pos;
  char *pattern = p->mt->pool + p->pool_len;
  char reason[128];
  size_t n = 0, i, offset;
  matcher_regex *re;

  for (i = at + 1; s[i] != '/'; i++) {
    if (s[i] == '\0' || (s[i] == '\\' && s[i + 1] == '\0'))
      return fail(p, at, "unterminated regex; expected a closing '/'");
    /* A backslash takes the next character with it; only \/ loses it. */
    if (s[i] == '\\' && s[++i] != '/') pattern[n++] = '\\';
    pattern[n++] = s[i];
  }
  re = matcher_regex_compile(pattern, n, reason, sizeof reason, &offset);
  if (!re) return fail(p, at, "invalid regex: %s (at byte %zu of the pattern)", reason, offset);
  t->value_kind = VALUE_REGEX;
  t->value.regex = re;
  p->pos = i + 1;
  return true;
}

static size_t skip_digits(const char *s, size_t i)
{
  while (isdigit((unsigned char)s[i])) i++;
  return i;
}

/* Reads a number: an int64 when it is written as an integer and fits, else a
 * double. */
static bool parse_number(parser *p, test *t)
{
  const char *s = p->src;
  const size_t at = p->pos;
  char digits[NUMBER_MAX_LENGTH + 1];
  bool integral = true;
  size_t i = at + (s[at] == '-');
  double real;

  if (!isdigit((unsigned char)s[i])) return fail(p, i, "expected a digit after '-'");
  i = skip_digits(s, i);
  if (s[i] == '.') {
    integral = false;
    if (!isdigit((unsigned char)s[++i])) return fail(p, i, "expected a digit after '.'");
    i = skip_digits(s, i);
  }
  if (s[i] == 'e' || s[i] == 'E') {
    integral = false;
    i += s[i + 1] == '+' || s[i + 1] == '-' ? 2 : 1;
    if (!isdigit((unsigned char)s[i])) return fail(p, i, "expected a digit in the exponent");
    i = skip_digits(s, i);
  }
  if (i - at > NUMBER_MAX_LENGTH)
    return fail(p, at, "number longer than %d characters", NUMBER_MAX_LENGTH);
  memcpy(digits, s + at, i - at);
  digits[i - at] = '\0';
  p->pos = i;

  errno = 0;
  if (integral) {
    long long integer = strtoll(digits, NULL, 10);
    if (errno == 0) {
      t->value_kind = VALUE_INTEGER;
      t->value.integer = integer;
      return true;
    }
  }
  real = strtod(digits, NULL);
  if (isinf(real)) return fail(p, at, "number out of range");
  t->value_kind = VALUE_REAL;
  t->value.real = real;
  return true;
}

static bool parse_value(parser *p, test *t, value_kind kind)
{
  size_t word_len = identifier_length(p->src + p->pos);

  switch (kind) {
  case VALUE_STRING:
    t->value_kind = VALUE_STRING;
    return parse_string(p, &t->value.string);
  case VALUE_REGEX: return parse_regex(p, t);
  case VALUE_INTEGER:
  case VALUE_REAL: return parse_number(p, t);
  case VALUE_BOOL:
  case VALUE_NIL:
    t->value_kind = (uint8_t)kind;
    t->value.boolean = p->src[p->pos] == 'T';
    p->pos += word_len;
    return true;
  }
  return false;
}

/* variable operator value; the variable's first word is src[at, at+len). */
static bool parse_comparison(parser *p, size_t at, size_t len)
{
  const char *word = p->src + at;
  test t = { 0 };
  strview var;
  value_kind kind;
  size_t op_at, value_at;

  if (is_word(word, len, "Fields")) {
    if (!parse_field_ref(p, &t)) return false;
  } else {
    msg_header h = msg_header_by_name(word, len);
    if (h == MSG_H_COUNT)
      return fail(p, at, "unknown variable '%.*s'; expected a header name, "
                  "Fields[name], TRUE, FALSE or '('", (int)len, word);
    t.subject = (uint8_t)header_subject(h);
    t.header = (uint8_t)h;
  }
  var = (strview){ word, (uint32_t)(p->pos - at) };
  while (isspace((unsigned char)var.ptr[var.len - 1])) var.len--;

  skip_space(p);
  op_at = p->pos;
  if (!parse_operator(p, &t.op))
    return fail(p, op_at, "expected an operator (== != < <= > >= =~ !~) after '%.*s'",
                (int)var.len, var.ptr);
  t.accepts = op_accepts[t.op];
  skip_space(p);
  value_at = p->pos;
  if (!classify_value(p->src + value_at, &kind))
    return fail(p, value_at, "expected a value after '%s'", op_text[t.op]);
  return check_pairing(p, &t, kind, var, op_at, value_at) &&
         parse_value(p, &t, kind) && add_test(p, &t);
}

static bool parse_or(parser *p);

static bool parse_primary(parser *p)
{
  size_t at, len;

  skip_space(p);
  at = p->pos;
  if (p->src[at] == '(') {
    if (p->depth == MATCHER_MAX_DEPTH)
      return fail(p, at, "parentheses nested deeper than %d", MATCHER_MAX_DEPTH);
    p->depth++;
    p->pos++;
    if (!parse_or(p)) return false;
    if (!accept(p, ")"))
      return fail(p, p->pos, "expected '&&', '||' or ')' to close the '(' at column %zu",
                  at + 1);
    p->depth--;
    return true;
  }
  len = identifier_length(p->src + at);
  if (len == 0) return fail(p, at, "expected a comparison, TRUE, FALSE or '('");
  p->pos += len;
  if (is_word(p->src + at, len, "TRUE") || is_word(p->src + at, len, "FALSE")) {
    test t = { .subject = SUBJECT_CONSTANT, .value_kind = VALUE_BOOL };
    t.value.boolean = p->src[at] == 'T';
    return add_test(p, &t);
  }
  return parse_comparison(p, at, len);
}

static bool parse_and(parser *p)
{
  const uint32_t first = p->mt->ntests;

  if (!parse_primary(p)) return false;
  while (accept(p, "&&")) {
    patch_exits(p->mt, first, PENDING_HOLDS, p->mt->ntests);
    if (!parse_primary(p)) return false;
  }
  return true;
}

static bool parse_or(parser *p)
{
  const uint32_t first = p->mt->ntests;

  if (!parse_and(p)) return false;
  while (accept(p, "||")) {
    patch_exits(p->mt, first, PENDING_FAILS, p->mt->ntests);
    if (!parse_and(p)) return false;
  }
  return true;
}

matcher *matcher_compile(const char *expr, char *err, size_t errlen)
{
  parser p = { .src = expr, .err = err, .errlen = errlen };
  size_t len = strnlen(expr, MATCHER_MAX_LENGTH + 1);

  if (len > MATCHER_MAX_LENGTH) {
    fail(&p, MATCHER_MAX_LENGTH, "expression longer than %d bytes", MATCHER_MAX_LENGTH);
    return NULL;
  }
  p.mt = calloc(1, sizeof *p.mt);
  if (p.mt) p.mt->pool = malloc(len + 1);
  if (!p.mt || !p.mt->pool) {
    fail_out_of_memory(&p);
    matcher_free(p.mt);
    return NULL;
  }
  if (!parse_or(&p)) {
    matcher_free(p.mt);
    return NULL;
  }
  skip_space(&p);
  if (p.src[p.pos] != '\0') {
    fail(&p, p.pos, "expected '&&', '||' or the end of the expression");
    matcher_free(p.mt);
    return NULL;
  }
  patch_exits(p.mt, 0, PENDING_HOLDS, p.mt->ntests);
  patch_exits(p.mt, 0, PENDING_FAILS, p.mt->ntests + 1);
  return p.mt;
}

void matcher_free(matcher *mt)
{
  if (!mt) return;
  for (uint32_t i = 0; i < mt->ntests; i++) {
    if (mt->tests[i].value_kind == VALUE_REGEX) matcher_regex_free(mt->tests[i].value.regex);
  }
  free(mt->tests);
  free(mt->pool);
  free(mt);
}
