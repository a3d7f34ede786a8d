/*
 * file_input.h - stdin_input and file_input: one stream read to its end.
 *
 *   stdin = { type = "stdin_input", decoder = "syslog" }
 *   app = { type = "file_input", path = "/var/log/app.log" }
 *
 * A file_input's regular file resumes at its checkpoint (with a
 * state_dir), and a stop inside a line leaves that line to the resumed
 * run (input.h). A FIFO or device is read as a stream, as standard input
 * is. Reads are an eighth of memory_budget, from 64 KiB to 1 MiB.
 */
#ifndef LUMBERJIT_FILE_INPUT_H
#define LUMBERJIT_FILE_INPUT_H

#include "plugin_type.h"

extern const plugin_type stdin_input_type, file_input_type;

#endif
