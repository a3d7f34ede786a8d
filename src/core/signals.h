/*
 * signals.h - the process's signal handling, installed first thing in
 * main so that a signal during a slow start is handled, not fatal.
 *
 * SIGPIPE is ignored: a closed reader is a write error (EPIPE) that the
 * output reports. SIGINT and SIGTERM ask the handler to stop, SIGHUP to
 * reload its configuration, SIGUSR1 to reopen its files. Signals are
 * delivered from the loop, so one that comes during start-up waits there
 * until the handler is set and the loop runs; a stop or a reload that
 * comes while no handler is set (between the pipelines of a reload) goes
 * to the next one set. The signal handles do not keep the loop running:
 * it ends when the work does.
 */
#ifndef LUMBERJIT_SIGNALS_H
#define LUMBERJIT_SIGNALS_H

#include <uv.h>

typedef struct {
  void (*stop)(void *ud, const char *signame);
  void (*reload)(void *ud, const char *signame);
  void (*reopen)(void *ud, const char *signame);
  void *ud;
} signals_handler;

int signals_start(uv_loop_t *loop);
/* Sets (or with NULL, clears) who receives the signals. */
void signals_set_handler(const signals_handler *h);
/* Closes the handles; the loop must run once more to finish closing. */
void signals_close(void);

#endif
