/*
 * join.h - joins lines into records before they are decoded: a message
 * logged over several lines (a stack trace), or the pieces of a line a
 * container runtime split.
 *
 *   multiline = { start = "^%d%d%d%d%-%d%d%-%d%d" }   a line matching starts
 *                                         a record; others join the one before
 *   multiline = { continue = "^%s" }      a line matching joins the one before
 *   multiline = { cri = true }            CRI "TIME STREAM P msg" pieces are
 *                                         joined up to the F line (tagged F);
 *                                         a whole line of the other stream
 *                                         between them passes on first
 *   multiline = { docker = true }         json-file pieces whose "log" does not
 *                                         end in \n are joined into one entry
 *
 * Lines joined by a pattern are joined with "\n"; a joined record's position
 * is its first line's. A record is handed on when the next one starts, when
 * it reaches max_lines (default 1000) or max_bytes (default 1 MiB), or when
 * no line came for flush_ms (default 1000; the tail input's scans look).
 *
 * Patterns are Lua patterns, run by lumberjit's own matcher (pattern.h) in
 * a Lua state of the loop thread's, each match stopped after 1,000,000
 * steps (the line then counts as not matching, and it is logged once). A
 * pattern is checked when the configuration loads.
 *
 * The checkpoint never passes a held line: while lines are held, a read's
 * acknowledged end stops at the first of them (join_held_position).
 */
#ifndef LUMBERJIT_JOIN_H
#define LUMBERJIT_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef enum { JOIN_NONE, JOIN_START, JOIN_CONTINUE, JOIN_CRI, JOIN_DOCKER } join_mode;

typedef struct {
  join_mode mode;
  char *pattern;         /* JOIN_START, JOIN_CONTINUE */
  uint64_t max_lines, max_bytes, flush_ms;
} join_rule;

typedef struct join_matcher join_matcher;

typedef struct {
  const join_rule *rule;
  join_matcher *jm;
  buf held;
  uint64_t held_pos;     /* the first held line's position */
  uint64_t held_lines;
  uint64_t held_since_ms;
  buf suffix;            /* docker: the held entry after its log text */
} line_joiner;

typedef void (*join_emit_fn)(void *ud, const char *bytes, size_t len,
                             uint64_t position);

/* One matcher serves every joiner of the loop thread; NULL when out of
 * memory. */
join_matcher *join_matcher_new(void);
void join_matcher_free(join_matcher *jm);
/* Checks a pattern as the config loads; false with the reason. */
bool join_pattern_ok(const char *pattern, char *err, size_t errlen);

void join_init(line_joiner *j, const join_rule *rule, join_matcher *jm);
/* Takes one line; emits whatever records it completes. */
void join_line(line_joiner *j, const char *line, size_t len, uint64_t pos,
               uint64_t now_ms, join_emit_fn emit, void *ud);
/* Hands on what is held. */
void join_flush(line_joiner *j, join_emit_fn emit, void *ud);
static inline bool join_holding(const line_joiner *j)
{
  return j->held_lines > 0;
}
static inline uint64_t join_held_position(const line_joiner *j)
{
  return j->held_pos;
}
void join_free(line_joiner *j);

#endif
