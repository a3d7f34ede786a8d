/*
 * log.h - lumberjit's own log: one line per event on stderr, each with its
 * level, so that operators can grep terminations, restarts and errors.
 *
 * A line is "TIMESTAMP LEVEL lumberjit: TEXT", the timestamp in UTC. When
 * stderr is the journal (JOURNAL_STREAM names its device and inode, as
 * systemd sets it for a unit's stderr), a line is "<N>TEXT" instead: the
 * journal stamps it itself, and the sd-daemon priority prefix <N> gives it
 * its priority, so `journalctl -p warning` finds the warnings.
 *
 * Lines under the level set by log_set_level (the config's log_level) are
 * not written. Any thread may log: the level is an atomic.
 */
#ifndef LUMBERJIT_LOG_H
#define LUMBERJIT_LOG_H

#include <stdbool.h>

/* In the order of syslog's priorities: a level shows those before it. */
typedef enum {
  LOG_LEVEL_ERROR,   /* something failed: a record, an input, an output */
  LOG_LEVEL_WARNING, /* something is wrong but the run goes on */
  LOG_LEVEL_INFO,    /* what the run does: starts, stops, summaries */
  LOG_LEVEL_DEBUG
} log_level;

/* A line at `level`. */
void log_at(log_level level, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
/* A line at info. */
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define log_error(...) log_at(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_at(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_debug(...) log_at(LOG_LEVEL_DEBUG, __VA_ARGS__)

/* Lines above `level` are dropped from now on. */
void log_set_level(log_level level);
/* "error", "warning", "info" or "debug"; -1 for any other name. */
int log_level_parse(const char *name, log_level *level);
/* The names, in level order, for help texts. */
extern const char *const log_level_names[];
/* Looks whether stderr is the journal (JOURNAL_STREAM) and, if so, writes
 * priority prefixes from now on; true when it is. Call once, at start. */
bool log_detect_journal(void);

/* A sandbox_log_fn: logs the runtime's lines as they are (warnings: they
 * tell of terminations, restarts and stops, or are a plugin's print). */
void log_sandbox_line(void *ud, const char *line);

#endif
