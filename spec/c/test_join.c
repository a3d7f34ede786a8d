/*
 * test_join.c - the joiner: pattern rules, limits, CRI and Docker pieces,
 * and the position a checkpoint must not pass while lines are held.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "join.h"

typedef struct {
  char out[8][256];
  uint64_t pos[8];
  int n;
} emitted;

static void collect(void *ud, const char *bytes, size_t len, uint64_t position)
{
  emitted *e = ud;

  if (e->n < 8) {
    snprintf(e->out[e->n], sizeof e->out[e->n], "%.*s", (int)len, bytes);
    e->pos[e->n] = position;
  }
  e->n++;
}

static void feed(line_joiner *j, emitted *e, const char *line, uint64_t pos)
{
  join_line(j, line, strlen(line), pos, 0, collect, e);
}

static void test_start_pattern(void)
{
  join_matcher *jm = join_matcher_new();
  join_rule rule = {JOIN_START, "^%d%d%d%d ", 3, 1u << 20, 1000};
  line_joiner j;
  emitted e = {0};

  join_init(&j, &rule, jm);
  feed(&j, &e, "2026 one", 0);
  feed(&j, &e, "  at a", 9);
  CHECK(e.n == 0 && join_holding(&j) && join_held_position(&j) == 0);
  feed(&j, &e, "2026 two", 16);
  CHECK(e.n == 1 && strcmp(e.out[0], "2026 one\n  at a") == 0 && e.pos[0] == 0);
  CHECK(join_held_position(&j) == 16);
  feed(&j, &e, " b", 25);
  feed(&j, &e, " c", 28); /* the third line: max_lines */
  CHECK(e.n == 2 && strcmp(e.out[1], "2026 two\n b\n c") == 0 && !join_holding(&j));
  feed(&j, &e, " d", 31); /* no start before it: it starts a record */
  join_flush(&j, collect, &e);
  CHECK(e.n == 3 && strcmp(e.out[2], " d") == 0 && e.pos[2] == 31);
  join_free(&j);
  join_matcher_free(jm);
}

static void test_continue_pattern_and_bad_patterns(void)
{
  join_matcher *jm = join_matcher_new();
  join_rule rule = {JOIN_CONTINUE, "^%s", 100, 16, 1000};
  line_joiner j;
  emitted e = {0};
  char err[256];

  join_init(&j, &rule, jm);
  feed(&j, &e, "Exception", 0);
  feed(&j, &e, " at x", 10);
  feed(&j, &e, " at y", 16); /* 15 + 1 + 5 > max_bytes: a new record */
  feed(&j, &e, "next", 22);
  CHECK(e.n == 2 && strcmp(e.out[0], "Exception\n at x") == 0);
  CHECK(strcmp(e.out[1], " at y") == 0 && e.pos[1] == 16);
  join_free(&j);
  join_matcher_free(jm);
  CHECK(join_pattern_ok("^%d+%-", err, sizeof err));
  CHECK(!join_pattern_ok("[a", err, sizeof err) && strstr(err, "malformed"));
  CHECK(!join_pattern_ok("%", err, sizeof err));
}

static void test_cri(void)
{
  join_rule rule = {JOIN_CRI, NULL, 1000, 1u << 20, 1000};
  line_joiner j;
  emitted e = {0};

  join_init(&j, &rule, NULL);
  feed(&j, &e, "T1 stdout P ab", 0);
  feed(&j, &e, "T2 stderr F err", 15);  /* the other stream passes */
  feed(&j, &e, "T3 stdout P cd", 31);
  CHECK(e.n == 1 && strcmp(e.out[0], "T2 stderr F err") == 0);
  CHECK(join_held_position(&j) == 0);
  feed(&j, &e, "T4 stdout F ef", 46);
  CHECK(e.n == 2 && strcmp(e.out[1], "T1 stdout F abcdef") == 0 && e.pos[1] == 0);
  feed(&j, &e, "not cri", 61);
  feed(&j, &e, "T5 stdout F", 69);      /* an empty message */
  CHECK(e.n == 4 && strcmp(e.out[2], "not cri") == 0 &&
        strcmp(e.out[3], "T5 stdout F") == 0);
  join_free(&j);
}

static void test_docker(void)
{
  join_rule rule = {JOIN_DOCKER, NULL, 1000, 1u << 20, 1000};
  line_joiner j;
  emitted e = {0};

  join_init(&j, &rule, NULL);
  feed(&j, &e, "{\"log\":\"a \\\"q\\\" \",\"stream\":\"stdout\",\"time\":\"T1\"}", 0);
  feed(&j, &e, "{\"log\":\"b\\\\\",\"stream\":\"stdout\",\"time\":\"T2\"}", 50);
  CHECK(e.n == 0); /* b ends in an escaped backslash, not a newline */
  feed(&j, &e, "{\"log\":\"c\\n\",\"stream\":\"stdout\",\"time\":\"T3\"}", 90);
  CHECK(e.n == 1);
  CHECK(strcmp(e.out[0],
               "{\"log\":\"a \\\"q\\\" b\\\\c\\n\",\"stream\":\"stdout\",\"time\":\"T1\"}") == 0);
  feed(&j, &e, "{\"log\":\"whole\\n\",\"stream\":\"stderr\",\"time\":\"T4\"}", 130);
  CHECK(e.n == 2 && e.pos[1] == 130);
  join_free(&j);
}

int main(void)
{
  test_start_pattern();
  test_continue_pattern_and_bad_patterns();
  test_cri();
  test_docker();
  return check_summary();
}
