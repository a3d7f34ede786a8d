/*
 * service.h - the collector as it runs for its whole life (main.c): the
 * pipeline of the configuration, the HTTP endpoint and systemd's notices
 * around it, the PID file, and reloads.
 *
 * A reload (SIGHUP, `lumberjit --reload`, or a change that watch_config
 * sees) loads the configuration again and checks it as --check does. One
 * that fails keeps the running pipeline, logs why (FILE:LINE) and is
 * counted (lumberjit_config_reloads_total{result="failure"}); one that
 * changes nothing reopens the output files (logrotate's postrotate) and
 * no more. Otherwise the pipeline stops as at SIGTERM, but for the
 * systemd notice (RELOADING=1, not STOPPING=1): its inputs stop, what
 * they read is written, their checkpoints saved, and the decoders,
 * encoders and filters the new configuration keeps unchanged leave their
 * sandboxes, Lua state and all, for the new pipeline, which then starts
 * from the checkpoints. The HTTP port, the PID file and the watchdog stay,
 * and so do the listeners' sockets and stream connections (syslog_carry.c).
 * A configuration whose pipeline cannot be built (a port taken) goes back
 * to the one before. A reload asked while one is under way follows it.
 *
 * A reload refuses a configuration with a stdin_input (what it read ahead
 * would be lost) or an input of files without state_dir (the new pipeline
 * could not start where the old one stopped).
 */
#ifndef LUMBERJIT_SERVICE_H
#define LUMBERJIT_SERVICE_H

#include "config.h"

/* Runs the collector of cfg (loaded from path; the service owns it from
 * here and frees it) until its inputs end or a stop; returns the exit
 * status. */
int service_run(const char *path, config *cfg);
/* `lumberjit -c PATH --reload`: checks the configuration at path, then
 * sends SIGHUP to the process its pid_file names; returns the exit
 * status, having said what it did or why not. */
int service_signal_reload(const char *path);

#endif
