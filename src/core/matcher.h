/*
 * matcher.h - Heka's message matcher: a boolean expression over a message's
 * headers and fields that routes messages to the plugins that want them.
 *
 *   Type == "syslog" && Severity < 5
 *   (Fields[status] >= 500 || Payload =~ /timed? ?out/) && Hostname != "dev"
 *   Fields[tags][1][0] == 'alternate'   Fields[ok] == TRUE   Fields[x] == NIL
 *
 * Compile once at configuration time, then evaluate per message. A compiled
 * matcher is immutable: any number of threads may evaluate it at once, and
 * evaluation never allocates. The grammar and the comparison rules are
 * described at the top of matcher.c.
 */
#ifndef LUMBERJIT_MATCHER_H
#define LUMBERJIT_MATCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "message.h"

/* Bounds that keep compilation cheap whatever the configuration says. */
#define MATCHER_MAX_LENGTH 4096 /* bytes of expression text */
#define MATCHER_MAX_DEPTH 64    /* nested parentheses */

typedef struct matcher matcher;

/* Compiles the NUL-terminated expression `expr`. On error returns NULL and,
 * when err is not NULL, writes one line of at most errlen - 1 bytes that names
 * the 1-based column (a byte offset) and what was expected there, e.g.
 * "column 14: expected a value after '=='". Running out of memory is
 * reported as "out of memory". */
matcher *matcher_compile(const char *expr, char *err, size_t errlen);

/* True when message m satisfies the matcher. No locking, and no allocation
 * but a thread's first regex match (matcher_regex.h). A regex that hits its
 * match limit makes its =~ or !~ false, and logs that the first time. */
bool matcher_eval(const matcher *mt, const msg *m);

/* True when mt's answer does not depend on the message (a bare TRUE or
 * FALSE, or one that decides before its first comparison, as "TRUE ||
 * Type == 'x'"): *value is that answer. */
bool matcher_constant(const matcher *mt, bool *value);

/* Frees a compiled matcher; NULL is allowed. */
void matcher_free(matcher *mt);

#endif
