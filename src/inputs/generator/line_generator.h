/*
 * line_generator.h - varied log lines made up on the spot, for benchmark
 * runs without a file of lines (generator_input). Lines differ as real logs
 * do, since one line repeated lets LuaJIT intern its strings once and
 * halves the measured cost; bench/lib/gen_lines.py writes the same kinds to
 * files, and says what varies in each.
 *
 *   LINES_W1      the W1 Filebeat metrics line (WORKLOADS.md; ~250 bytes):
 *                 its six counters vary
 *   LINES_SYSLOG  RFC 3164 as W3 sends it: priority, host (4), program (6),
 *                 pid (50), a message of 3-12 words of gen_lines.py, with a
 *                 key=value pair in half the lines
 *   LINES_NGINX   nginx's combined format: client, method, path, status,
 *                 size, referrer and user agent vary
 *   LINES_TEMPLATE  a line of the caller's, literal text with placeholders
 *                 each line fills anew (lumberjit bench --format TEMPLATE):
 *                 %{seq} the line's number from 1, %{iso} %{rfc3164}
 *                 %{clf} the time in those forms, %{word} one of the syslog
 *                 vocabulary, %{host} %{program} %{pid} as in syslog lines,
 *                 %{int} a number below 10000, %{ip} an IPv4 address; a line
 *                 longer than LINE_GENERATOR_MAX is cut there
 *
 * Each line carries the time it was made, in the format's own form. The
 * sequence is a function of the seed alone, so runs compare.
 */
#ifndef LUMBERJIT_LINE_GENERATOR_H
#define LUMBERJIT_LINE_GENERATOR_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef enum { LINES_W1, LINES_SYSLOG, LINES_NGINX, LINES_TEMPLATE } line_format;

/* The longest line any format makes, newline excluded. */
#define LINE_GENERATOR_MAX 512

typedef struct {
  line_format format;
  const char *template;  /* LINES_TEMPLATE's, the caller's: checked by
                            line_template_check */
  uint64_t seq;          /* lines made */
  uint64_t state;        /* the PRNG's (splitmix64) */
  time_t stamped;        /* the second the time texts are of */
  char iso[40];          /* that second in each format's form */
  char rfc3164[20];
  char clf[32];
} line_generator;

/* template: LINES_TEMPLATE's line, else NULL; it must outlive g. */
void line_generator_init(line_generator *g, line_format format,
                         const char *template, uint64_t seed);
/* 0 when every placeholder of template is known; else -1, naming the
 * first that is not in err. */
int line_template_check(const char *template, char *err, size_t errlen);
/* Writes the next line (no newline) to out, which has room for
 * LINE_GENERATOR_MAX bytes; returns its length. now: the time it bears. */
size_t line_generator_next(line_generator *g, char *out, time_t now);
/* The formats' names, by line_format, NULL-ended ("template" last). */
extern const char *const line_format_names[];

#endif
