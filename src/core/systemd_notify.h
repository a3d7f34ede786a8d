/*
 * systemd_notify.h - telling systemd how the service is, by sd_notify(3)'s
 * documented datagram protocol (no libsystemd): each state is one datagram
 * of "KEY=VALUE" lines sent to the AF_UNIX socket NOTIFY_SOCKET names (a
 * path, or '@' for the abstract namespace). Without NOTIFY_SOCKET, as
 * outside a Type=notify unit, everything here does nothing.
 *
 *   READY=1     the inputs are started (the cli, from the pipeline's hook)
 *   STOPPING=1  the run stops: a signal, a failed output, the inputs' end
 *   WATCHDOG=1  every WATCHDOG_USEC / 2, from a timer on the loop: a loop
 *               that is stuck stops sending it, and systemd restarts the
 *               service (WatchdogSec=)
 *   RELOADING=1 for a reload, sent with systemd_notify before it starts
 *               and READY=1 after (Type=notify-reload's protocol)
 *
 * The sends never block: a full socket loses the datagram (systemd reads
 * them at once; a watchdog ping comes again soon).
 */
#ifndef LUMBERJIT_SYSTEMD_NOTIFY_H
#define LUMBERJIT_SYSTEMD_NOTIFY_H

#include <uv.h>

/* Sends `state` (one or more "KEY=VALUE" lines); 0 when sent or when
 * there is no NOTIFY_SOCKET, -1 (errno) when it could not be sent. */
int systemd_notify(const char *state);
/* printf's form of it; STATUS= lines are what `systemctl status` shows. */
int systemd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Starts the watchdog pings on loop when WATCHDOG_USEC asks for them (and
 * WATCHDOG_PID, if set, is this process): 0, or a uv error. The timer does
 * not keep the loop running. */
int systemd_watchdog_start(uv_loop_t *loop);
/* Stops the pings and closes the socket; the loop must run once more to
 * finish closing the timer. */
void systemd_notify_close(void);

#endif
