/*
 * matcher_regex.c - PCRE2 behind matcher_regex.h.
 *
 * Patterns are JIT-compiled where the platform allows (pcre2_match() then
 * runs the machine code; it falls back to the interpreter by itself). The
 * limits live in one match context shared by every pattern: PCRE2 only reads
 * it. A match block is per thread (pcre2_match() writes to it), kept under
 * a pthread key whose destructor frees it when the thread exits.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "matcher_regex.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* The longest part of a pattern a log line quotes. */
enum { PATTERN_QUOTED = 200 };

struct matcher_regex {
  pcre2_code *code;
  atomic_flag logged; /* a failure was logged */
  size_t len;
  char pattern[];     /* for the log */
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t match_block_key;
static pcre2_match_context *limits; /* NULL when it could not be made */

static void free_match_block(void *block)
{
  pcre2_match_data_free(block);
}

static void init_once(void)
{
  if (pthread_key_create(&match_block_key, free_match_block) != 0) return;
  limits = pcre2_match_context_create(NULL);
  if (!limits) return;
  pcre2_set_match_limit(limits, MATCHER_REGEX_MATCH_LIMIT);
  pcre2_set_heap_limit(limits, MATCHER_REGEX_HEAP_LIMIT_KIB);
}

matcher_regex *matcher_regex_compile(const char *pattern, size_t len,
                                     char *err, size_t errlen, size_t *offset)
{
  const uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
                           PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C;
  matcher_regex *re;
  PCRE2_SIZE at = 0;
  int code;

  *offset = 0;
  pthread_once(&once, init_once);
  re = limits ? calloc(1, sizeof *re + len + 1) : NULL;
  if (!re) {
    if (errlen) pcre2_get_error_message(PCRE2_ERROR_NOMEMORY, (PCRE2_UCHAR *)err, errlen);
    return NULL;
  }
  re->code = pcre2_compile((PCRE2_SPTR)pattern, len, options, &code, &at, NULL);
  if (!re->code) {
    if (errlen) pcre2_get_error_message(code, (PCRE2_UCHAR *)err, errlen);
    *offset = at;
    free(re);
    return NULL;
  }
  atomic_flag_clear(&re->logged);
  memcpy(re->pattern, pattern, len);
  re->len = len;
  /* Not every platform can JIT (no executable memory): the interpreter
   * gives the same results, only slower. */
  (void)pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
  return re;
}

static pcre2_match_data *match_block(void)
{
  pcre2_match_data *block = pthread_getspecific(match_block_key);

  if (block) return block;
  /* One pair: the matcher asks only whether there is a match. */
  block = pcre2_match_data_create(1, NULL);
  if (block && pthread_setspecific(match_block_key, block) != 0) {
    pcre2_match_data_free(block);
    return NULL;
  }
  return block;
}

matcher_regex_result matcher_regex_match(matcher_regex *re, const char *subject,
                                         size_t len)
{
  pcre2_match_data *block = match_block();
  int rc = block ? pcre2_match(re->code, (PCRE2_SPTR)subject, len, 0, 0, block, limits)
                 : PCRE2_ERROR_NOMEMORY;

  if (rc >= 0) return MATCHER_REGEX_MATCH;
  if (rc == PCRE2_ERROR_NOMATCH) return MATCHER_REGEX_NO_MATCH;
  if (!atomic_flag_test_and_set(&re->logged)) {
    char reason[128];
    pcre2_get_error_message(rc, (PCRE2_UCHAR *)reason, sizeof reason);
    log_warning("message_matcher regex /%.*s%s/ gave up on a message of %zu bytes: %s; "
            "its =~ and !~ are false for such messages (logged once per regex)",
            (int)(re->len < PATTERN_QUOTED ? re->len : PATTERN_QUOTED), re->pattern,
            re->len > PATTERN_QUOTED ? "..." : "", len, reason);
  }
  return MATCHER_REGEX_FAILED;
}

void matcher_regex_free(matcher_regex *re)
{
  if (!re) return;
  pcre2_code_free(re->code);
  free(re);
}
