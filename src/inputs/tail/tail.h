/*
 * tail.h - tail_input: follows every file its glob patterns match, through
 * rotation, truncation and restarts, on the libuv loop.
 *
 *   app = { type = "tail_input", paths = { "/var/log/app/[a-z]*.log" },
 *           exclude = { "*.gz" }, decoder = "json" }
 *
 * Finding files: the patterns are globbed at start and every
 * scan_interval_ms (default 1000); the directories the patterns name are
 * watched with inotify (tail_notify.c), so a new file is found at once, and
 * the timed scan is the safety net for a missed event or a directory that
 * could not be watched. Paths matching an `exclude` pattern, files that are
 * not regular, and files lumberjit itself writes are left alone. A scan
 * that cannot list a directory (out of file descriptors: glob opens each
 * one; a permission) takes no file it did not find for gone: each keeps
 * its reading and offset, and the next scan that lists it goes on.
 *
 * Where reading starts: a file the state file knows (same device and
 * inode, and still the first and last bytes read: checkpoint.h) resumes at
 * its acknowledged offset, under its name or another in the same directory
 * (rotated while lumberjit was down); one it knew by device and inode that
 * no longer holds those bytes (truncated or rewritten meanwhile) is read
 * from its start; other files found by the first scan start at their end
 * (their size when found), unless read_from_head; files that appear later
 * are read from their head (they are new), or, if they are a copy, from
 * where their original was read to. A copytruncate made while lumberjit
 * was down is not recognised: its copy is a file found by the first scan.
 *
 * Following: each open file is watched with inotify; it is read up to its
 * end, in reads of read_buffer bytes (default 128 KiB), and read again when
 * it changes (or when a scan sees it grew): at once after a quiet spell,
 * and at most every read_interval_ms (default 200) while it is written to
 * all the time (tail_notify.c). A last line without a newline
 * is held until last_line_timeout_ms (default 1000) passes without growth,
 * then handed on as a record.
 *
 * Identity (tail_identity.h): device + inode identify a file, never its
 * name or its bytes. Bytes only confirm, with a signature of what was read
 * (its length, a hash of its first KiB, its last bytes), that a file still
 * holds what was read from it, and that a new file is a copy. So
 *   rename + create   the old file (under any name, or none) is read to its
 *                     end; once it has not grown for rotate_wait_ms
 *                     (default 5000) it is closed; the new file at the path
 *                     is read from its head;
 *   truncation        checked at every read (the bytes before the offset
 *                     must still be there) and at every scan (and the first
 *                     KiB): a file truncated, even if rewritten past the
 *                     offset since, is read again from 0, and an unfinished
 *                     last line read before it is not handed on (it would
 *                     be torn; a copy has it whole);
 *   copytruncate      a new file is a copy of a file only if it holds every
 *                     byte the signature checks (as long as what was read,
 *                     or shorter and equal to the last 8 KiB read) AND that
 *                     file is seen truncated (or, closed, shorter than
 *                     what was read): up to rotate_wait_ms +
 *                     scan_interval_ms before the copy is found, or up to
 *                     2 scan_interval_ms + YOUNG_FILE_WAIT_MS after it is
 *                     opened (it may wait for a slot first), while it is
 *                     held open (as is, for YOUNG_FILE_WAIT_MS, a new file
 *                     that may be a copy still being written); else it is
 *                     a new file, read from its head. A copy is read from where its original was
 *                     read to (or its end, if shorter), so what was written
 *                     between the last read and the truncation comes from
 *                     the copy, if a pattern matches it. A new file that
 *                     shares a banner with a file read differs from it
 *                     where the signature looks, and is read whole; only a
 *                     file whose bytes equal all the signature checks of a
 *                     file truncated a moment before is taken for its copy;
 *   delete            an open file is read to its end, then closed;
 *   symlink retarget  the old target is finished as if renamed.
 *
 * Resources: a file that has not grown for idle_close_ms (default 60000) is
 * closed and reopened when it grows (a closed file that is then renamed
 * out of the patterns is no longer followed: what its writer appends to it
 * under the new name is not read). At most min(max_open_files (default
 * 1024), fd_limit_budget()) files are open at once (a young file counts):
 * a file refused a slot or a descriptor (EMFILE, ENFILE) waits, counted
 * and logged once, and is opened by a later scan once one is free (until
 * then, like a closed file, it is not followed out of the patterns). A
 * file open(2) refuses (permissions) is logged once, counted, and read
 * once a scan can open it. File descriptors in use: one per open file,
 * one inotify descriptor in all.
 *
 * At a stop, each file's unterminated last line is held back when the
 * offsets are checkpointed: its offset is not acknowledged, so a restart
 * reads the line whole.
 */
#ifndef LUMBERJIT_TAIL_H
#define LUMBERJIT_TAIL_H

#include "join.h"
#include "plugin.h"

/* Its settings (tail_config.c reads them; the defaults are there too). */
typedef struct {
  char **paths;          /* glob patterns, NULL-terminated */
  char **exclude;        /* patterns of paths to leave alone; NULL-ended */
  char *path_field;      /* field naming the file; NULL: none */
  bool read_from_head;
  uint64_t scan_interval_ms, rotate_wait_ms, idle_close_ms;
  uint64_t read_interval_ms; /* a changed file is read at most this often */
  uint64_t last_line_timeout_ms, max_open_files, read_buffer;
  join_rule join;        /* multiline */
} config_tail;

extern const plugin_type tail_input_type;

/* Its part of the pipeline: a pl_input's kind. The input is done once a
 * stop has finished every open file. */
extern const input_kind tail_input_kind;
/* Closes the inotify watches the pipeline's tail_inputs share (its
 * close_shared). */
void tail_close_notify(void **state);

#endif
