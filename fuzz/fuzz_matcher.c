/*
 * fuzz_matcher.c - the message matcher (src/core/matcher.c): its parser on
 * any expression and its evaluator on random messages.
 *
 * Input: an expression up to the first NUL byte, then a message
 * (fuzz_msg.h). An expression that compiles is evaluated, and so are
 * expressions built around it, which must agree with it: "(E)",
 * "TRUE && (E)", "FALSE || (E)" give what E gives, "(E) && FALSE" never
 * matches and "(E) || TRUE" always does (the decision graph's wiring).
 */
#include <stdio.h>

#include "fuzz_msg.h"
#include "matcher.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static msg m;

/* -1: did not compile, else whether it matches. */
static int eval(const char *fmt, const char *expr)
{
  char text[MATCHER_MAX_LENGTH + 64], err[256];
  snprintf(text, sizeof text, fmt, expr);
  matcher *mt = matcher_compile(text, err, sizeof err);
  if (!mt) return -1;
  int r = matcher_eval(mt, &m);
  if (matcher_eval(mt, &m) != r) abort(); /* the same twice */
  matcher_free(mt);
  return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const uint8_t *nul = memchr(data, 0, size);
  size_t len = nul ? (size_t)(nul - data) : size;
  if (len > MATCHER_MAX_LENGTH) return 0;
  char *expr = malloc(len + 1); /* its own: ASan sees a read past it */
  if (!expr) abort();
  memcpy(expr, data, len);
  expr[len] = 0;
  static bool ready;
  if (!ready) msg_init(&m), ready = true;
  fuzz_in in = {data + len + (nul != NULL), size - len - (nul != NULL)};
  fuzz_msg(&m, &in);

  int r = eval("%s", expr);
  if (r >= 0) {
    static const struct { const char *fmt; int want; } around[] = {
      {"(%s)", -2}, {"TRUE && (%s)", -2}, {"FALSE || (%s)", -2},
      {"(%s) && FALSE", 0}, {"(%s) || TRUE", 1}};
    for (size_t i = 0; i < sizeof around / sizeof around[0]; i++) {
      int got = eval(around[i].fmt, expr), want = around[i].want;
      if (want == -2) want = r;
      /* One more level of parentheses may pass MATCHER_MAX_DEPTH. */
      if (got >= 0 && got != want) {
        fprintf(stderr, "\"%s\" gives %d, \"%s\" %d\n", expr, r,
                around[i].fmt, got);
        abort();
      }
    }
  }
  free(expr);
  return 0;
}
