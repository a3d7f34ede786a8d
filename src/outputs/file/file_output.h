/*
 * file_output.h - stdout_output and file_output: records written to a
 * file descriptor by output.c, each acknowledged once the kernel took all
 * of its bytes (output.h says how slow readers, a full disk and errors go).
 *
 *   out = { type = "file_output", path = "out.log", encoder = "json",
 *           message_matcher = "TRUE" }
 *
 * A file_output appends to its file, reopened on SIGHUP (log rotation); a
 * file left ending in a partial line by a killed run is cut back to its
 * last whole line first.
 */
#ifndef LUMBERJIT_FILE_OUTPUT_H
#define LUMBERJIT_FILE_OUTPUT_H

#include "plugin_type.h"

extern const plugin_type stdout_output_type, file_output_type;

#endif
