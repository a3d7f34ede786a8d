/*
 * matcher_regex.h - the regexes of the message matcher's =~ and !~, on PCRE2.
 *
 * Dialect: PCRE2 (Perl-compatible) in UTF-8 mode, with '$' matching only at
 * the very end of the subject (PCRE2_DOLLAR_ENDONLY), as in RE2, the syntax
 * of the Go regexps Heka's matchers used. Subjects need not be valid UTF-8:
 * an invalid byte never matches any part of a pattern (PCRE2_MATCH_INVALID_UTF)
 * and the rest of the subject still can. \C is refused. The README's
 * "Message matcher" section lists the differences from RE2.
 *
 * A match is bounded: PCRE2's match limit (MATCHER_REGEX_MATCH_LIMIT) caps
 * the backtracking steps from each start position, and its heap limit the
 * memory of the backtracking frames, so a pathological pattern such as
 * /^(a+)+$/ on a long run of 'a's ends in milliseconds with
 * MATCHER_REGEX_FAILED rather than running for ever.
 */
#ifndef LUMBERJIT_MATCHER_REGEX_H
#define LUMBERJIT_MATCHER_REGEX_H

#include <stddef.h>

/* Backtracking steps per start position (PCRE2's default is 10,000,000:
 * seconds of CPU for one message). A greedy .* over a 1 MiB payload takes
 * one step per byte it gives back. */
#define MATCHER_REGEX_MATCH_LIMIT 1000000
/* KiB of backtracking frames per match (PCRE2's default is 20 GB). */
#define MATCHER_REGEX_HEAP_LIMIT_KIB 8192

typedef struct matcher_regex matcher_regex;

typedef enum {
  MATCHER_REGEX_NO_MATCH = 0,
  MATCHER_REGEX_MATCH = 1,
  MATCHER_REGEX_FAILED = -1 /* a limit was hit, or out of memory */
} matcher_regex_result;

/* Compiles pattern[0, len) (it may hold NUL bytes). On error returns NULL
 * and writes PCRE2's reason, or "out of memory", to err (at most errlen - 1
 * bytes) and the pattern offset where it was found to *offset. */
matcher_regex *matcher_regex_compile(const char *pattern, size_t len,
                                     char *err, size_t errlen, size_t *offset);

/* Searches subject[0, len) for the pattern. Thread-safe: each thread keeps
 * one match block, made at its first match and freed when the thread ends,
 * so a match allocates only the first time and when a pattern needs more
 * backtracking frames than the thread has kept. The first
 * MATCHER_REGEX_FAILED of each regex is logged (log.h) with the pattern and
 * PCRE2's reason. */
matcher_regex_result matcher_regex_match(matcher_regex *re, const char *subject,
                                         size_t len);

/* NULL is allowed. */
void matcher_regex_free(matcher_regex *re);

#endif
