/*
 * tail.h - tail_input: follows every file its glob patterns match, through
 * rotation, truncation and restarts, on the libuv loop.
 *
 *   app = { type = "tail_input", paths = { "/var/log/app/[a-z]*.log" },
 *           exclude = { "*.gz" }, decoder = "json" }
 *
 * Finding files: the patterns are globbed at start and every
 * scan_interval_ms (default 1000); the directories the patterns name are
 * watched with inotify (uv_fs_event), so a new file is found at once, and
 * the timed scan is the safety net for a missed event or a directory that
 * could not be watched. Paths matching an `exclude` pattern, files that are
 * not regular, and files lumberjit itself writes are left alone.
 *
 * Where reading starts: a file the state file knows (same device, inode and
 * fingerprint: checkpoint.h) resumes at its acknowledged offset; other
 * files found by the first scan start at their end, unless read_from_head;
 * files that appear later are read from their head (they are new).
 *
 * Following: each open file is watched with inotify; it is read up to its
 * end, in reads of read_buffer bytes (default 128 KiB), and read again when
 * it changes (or when a scan sees it grew). A last line without a newline
 * is held until last_line_timeout_ms (default 1000) passes without growth,
 * then handed on as a record.
 *
 * Identity and rotation: a file is known by device, inode and fingerprint,
 * never by its name, so
 *   rename + create   the old file (under any name, or none) is read to its
 *                     end; once it has not grown for rotate_wait_ms
 *                     (default 5000) it is closed; the new file at the path
 *                     is read from its head;
 *   copytruncate      a file shorter than the offset read, or whose first
 *                     bytes changed, is read again from 0; a new file whose
 *                     first bytes (1 KiB, at least 64) are those of a file
 *                     being read, or truncated a moment ago, is taken for
 *                     its copy and read from where the original was read
 *                     to, so what was written between the last read and
 *                     the truncation comes from the copy (if a pattern
 *                     matches it). A new file shorter than 1 KiB is held
 *                     open for YOUNG_FILE_WAIT_MS first, until it tells;
 *   delete            an open file is read to its end, then closed;
 *   symlink retarget  the old target is finished as if renamed.
 *
 * Resources: a file that has not grown for idle_close_ms (default 60000) is
 * closed and reopened when it grows (a closed file that is then renamed
 * out of the patterns is no longer followed: what its writer appends to it
 * under the new name is not read); at most max_open_files (default 1024)
 * are open at once, the others wait for a free slot. File descriptors in
 * use: one per open file, one inotify descriptor in all.
 *
 * At a stop, each file's unterminated last line is held back when the
 * offsets are checkpointed: its offset is not acknowledged, so a restart
 * reads the line whole.
 */
#ifndef LUMBERJIT_TAIL_H
#define LUMBERJIT_TAIL_H

#include "pipeline_internal.h"

/* Its part of the pipeline: a pl_input's kind. The input is done once a
 * stop has finished every open file. */
extern const input_kind tail_input_kind;
/* Closes the directory watches the pipeline's tail_inputs share. */
void tail_close_dirs(struct tail_dir **dirs);

#endif
