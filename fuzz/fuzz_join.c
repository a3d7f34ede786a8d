/*
 * fuzz_join.c - the multiline joiner (src/multiline/join.c): start and
 * continue patterns, CRI pieces, Docker json-file pieces.
 *
 * Input: [0] mode (start, continue, cri, docker), [1] max_lines 1..16,
 * [2] max_bytes 1..256, then for the pattern modes a pattern up to the
 * first NUL byte (one join_pattern_ok refuses is not run), then lines cut
 * at LF, each in a buffer of its own. Every record emitted is checked:
 * its position is one of a line's, it is no longer than max_bytes unless
 * it is one line; with a pattern, the records joined by "\n" are the lines
 * joined by "\n" (nothing lost, nothing added, in order). After the last
 * line join_flush must leave nothing held.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "join.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static join_matcher *jm;

typedef struct {
  const join_rule *rule;
  buf out;               /* the records joined by "\n" */
  uint64_t records, lines;
  size_t longest_line;
} sink;

static void on_record(void *ud, const char *bytes, size_t len,
                      uint64_t position)
{
  sink *s = ud;
  if (position >= s->lines) {
    fprintf(stderr, "a record at position %llu of %llu lines\n",
            (unsigned long long)position, (unsigned long long)s->lines);
    abort();
  }
  if (len > s->rule->max_bytes && len > s->longest_line &&
      s->rule->mode != JOIN_DOCKER) {
    fprintf(stderr, "a record of %zu bytes (max_bytes %llu)\n", len,
            (unsigned long long)s->rule->max_bytes);
    abort();
  }
  if (s->records++ && !buf_append(&s->out, "\n", 1)) abort();
  if (!buf_append(&s->out, bytes, len)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!jm && !(jm = join_matcher_new())) abort();
  if (size < 3) return 0;
  join_rule rule = {.mode = (join_mode)(JOIN_START + data[0] % 4),
                    .max_lines = 1 + data[1] % 16,
                    .max_bytes = 1 + data[2],
                    .flush_ms = 1000};
  const char *p = (const char *)data + 3, *end = (const char *)data + size;
  char pattern[64], err[256];
  if (rule.mode == JOIN_START || rule.mode == JOIN_CONTINUE) {
    const char *nul = memchr(p, 0, (size_t)(end - p));
    if (!nul || nul - p >= (long)sizeof pattern) return 0;
    memcpy(pattern, p, (size_t)(nul - p + 1));
    p = nul + 1;
    if (!join_pattern_ok(pattern, err, sizeof err)) return 0;
    rule.pattern = pattern;
  }

  sink s = {.rule = &rule};
  buf all = {0};
  line_joiner j;
  join_init(&j, &rule, jm);
  for (uint64_t n = 0; p < end; n++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    char *line = malloc(len ? len : 1); /* its own: ASan sees past it */
    if (!line) abort();
    memcpy(line, p, len);
    if (len > s.longest_line) s.longest_line = len;
    s.lines++;
    if ((n && !buf_append(&all, "\n", 1)) || !buf_append(&all, p, len))
      abort();
    join_line(&j, line, len, n, n, on_record, &s);
    free(line);
    p += len + (nl != NULL);
  }
  join_flush(&j, on_record, &s);
  if (join_holding(&j)) abort();
  if ((rule.mode == JOIN_START || rule.mode == JOIN_CONTINUE) &&
      (all.len != s.out.len ||
       (all.len && memcmp(all.data, s.out.data, all.len) != 0))) {
    fprintf(stderr, "the records are not the lines joined\n");
    abort();
  }
  join_free(&j);
  buf_free(&all);
  buf_free(&s.out);
  return 0;
}
