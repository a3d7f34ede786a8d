/*
 * systemd_listen.h - the sockets systemd passes at the start (socket
 * activation), by sd_listen_fds(3)'s documented protocol, without
 * libsystemd (as systemd_notify.h speaks sd_notify's): LISTEN_PID names
 * the process they are for, LISTEN_FDS says how many descriptors it got,
 * from 3 on, and LISTEN_FDNAMES their FileDescriptorName=s, separated by
 * colons.
 *
 * Why: a socket unit (examples/lumberjit.socket) binds port 514 in systemd,
 * as root, so the service runs with no capability; and systemd keeps the
 * socket open across the service's restarts, so what senders send
 * meanwhile waits in the kernel's queue.
 *
 * A listener takes the passed socket of its type bound to its address, as
 * rsyslog's imuxsock takes /run/systemd/journal/syslog (by its path): the
 * config and the socket unit need no name in common. The address is the
 * one getsockname gives: a path for a Unix socket, an IP address and port
 * otherwise; a listener on 0.0.0.0:PORT (or *:PORT) also takes a [::]:PORT
 * socket that takes IPv4 as well, as ListenStream=514 makes. A socket no
 * listener takes is logged, by name, and closed.
 */
#ifndef LUMBERJIT_SYSTEMD_LISTEN_H
#define LUMBERJIT_SYSTEMD_LISTEN_H

#include <stdbool.h>
#include <sys/socket.h>

/* Reads the variables, marks the descriptors close-on-exec and unsets the
 * variables, so that no child takes them for its own. Called first thing
 * in main: unsetenv must not race a thread's getenv. */
void systemd_listen_take(void);

/* The passed socket of `type` (SOCK_STREAM: a listening one) bound at
 * `want` (AF_INET, AF_INET6: address and port; AF_UNIX: the path): 1 with
 * a descriptor of it in *fd (the caller's to close; close-on-exec,
 * non-blocking) and its name in *name (FileDescriptorName=, "unknown"
 * without one; it lives as long as the process); 0 when none matches; -1
 * (errno) when one does but no descriptor was left for it. The socket
 * itself stays open here, so a listener built again takes it again. 2:
 * the socket a reload kept (systemd_listen_keep), the caller's now, with
 * what was kept with it in *carried (NULL: nothing). */
int systemd_listen_claim(int type, const struct sockaddr *want, int *fd,
                         const char **name, void **carried);

/* Whether a claim of `type` at `want` would take the socket fd. */
bool systemd_listen_would_claim(int fd, int type,
                                const struct sockaddr *want);

/* Logs a warning for each passed socket no listener claimed, naming it,
 * and closes it: called once the inputs are built. */
void systemd_listen_close_unclaimed(void);

/* A reload hands a listener's socket to the next pipeline the same way:
 * the old listener keeps a descriptor of it here (instead of accepting
 * its backlog and closing it), so that connections and datagrams that
 * come meanwhile wait in the kernel's queue, and the new listener of the
 * same address claims it with systemd_listen_claim (which returns 2). A
 * kept socket is given once: the claim takes it off the table, and
 * systemd_listen_drop_kept closes those no listener took (their input
 * was removed, or moved) once the next pipeline is built, and at the end.
 * `carried` goes with it (a listener's open connections), to the claim,
 * or to drop(carried) when it is dropped; NULL: nothing. 0, or -1 (errno)
 * when no descriptor was left for it (carried is then the caller's). */
int systemd_listen_keep(int fd, void *carried, void (*drop)(void *carried));
void systemd_listen_drop_kept(void);

#endif
