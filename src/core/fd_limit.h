/*
 * fd_limit.h - the process's file descriptor budget.
 *
 * lumberjit holds a descriptor per followed file and per syslog
 * connection, and must still be able to open a checkpoint's temporary
 * file, a dead-letter or output file being reopened, the metrics file and
 * librdkafka's sockets when those run out. So at start the soft
 * RLIMIT_NOFILE is raised to the hard limit (as nginx's
 * worker_rlimit_nofile and systemd services do), and FD_LIMIT_RESERVED
 * descriptors are kept out of what inputs may take: tail_input opens at
 * most fd_limit_budget() files whatever its max_open_files says, and a
 * configuration whose max_open_files and max_connections cannot all fit
 * is warned about at start (pipeline_build.c).
 *
 * A descriptor an input cannot get (EMFILE, ENFILE) is never a silent
 * loss: syslog_input counts and logs the refused connection; tail_input
 * holds the file and opens it once a descriptor is free.
 */
#ifndef LUMBERJIT_FD_LIMIT_H
#define LUMBERJIT_FD_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* Descriptors kept free for the run's own files and sockets: the loop's
 * (epoll, signals, async handles), the log and standard streams, the
 * checkpoint and metrics writes, outputs and the dead-letter file,
 * librdkafka's broker sockets and the thread pool's reads. */
#define FD_LIMIT_RESERVED 64

/* Raises the soft limit to the hard one; returns the soft limit in force
 * after it (the old one if raising failed). Called once, at start. */
uint64_t fd_limit_raise(void);
/* The soft limit in force now. */
uint64_t fd_limit_current(void);
/* How many descriptors inputs may hold in all: the soft limit less the
 * reserve and those open now (0 when none are left). The count of those
 * open is at most FD_COUNT_TTL_MS old, plus the opens told since
 * (fd_limit_opened); closes since are not taken off, so it errs on the
 * side of fewer. One thread (the loop's) asks. */
#define FD_COUNT_TTL_MS 100
uint64_t fd_limit_budget(void);
/* An input opened a descriptor: the count above takes it in. */
void fd_limit_opened(void);
/* The first descriptor number inputs must not hold: the soft limit less
 * the reserve. open(2) and accept(2) take the lowest free number, so a
 * descriptor at or past it means fewer than FD_LIMIT_RESERVED are left. */
uint64_t fd_limit_ceiling(void);
/* Whether an errno (or a negative libuv error) means out of descriptors. */
bool fd_limit_exhausted(int err);

#endif
