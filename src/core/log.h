/*
 * log.h - lumberjit's own log: one line per event on stderr, with a UTC
 * timestamp, so that operators can grep terminations, restarts and errors.
 */
#ifndef LUMBERJIT_LOG_H
#define LUMBERJIT_LOG_H

void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A sandbox_log_fn: logs the runtime's lines as they are. */
void log_sandbox_line(void *ud, const char *line);

#endif
