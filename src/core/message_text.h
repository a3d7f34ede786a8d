/*
 * message_text.h - a message written for a person to read: its headers and
 * typed fields one per line, every byte of every string visible. What
 * `lumberjit --try` prints for each message a decoder made.
 *
 *   Timestamp: 2026-05-19T10:30:17.000000000Z (1779186617000000000)
 *   Type: "syslog"
 *   Severity: 4
 *   Fields:
 *     pri: 44
 *     raw: b"\x00\xff"
 *     took: 3.0 (representation "ms")
 *     tags: ["a", "b"]
 *
 * Strings are quoted, with \" \\ \n \r \t, and \xHH for other control bytes
 * and bytes that are not valid UTF-8; bytes fields are b"..."; a double
 * always shows a decimal point or an exponent, so 3.0 is not an integer's
 * 3; only the headers that are set are written.
 */
#ifndef LUMBERJIT_MESSAGE_TEXT_H
#define LUMBERJIT_MESSAGE_TEXT_H

#include <stdbool.h>

#include "buf.h"
#include "message.h"

/* Appends the message, each line starting with `indent`; false when memory
 * is exhausted. */
bool message_text(buf *b, const msg *m, const char *indent);

/* Appends bytes quoted and escaped as above. */
bool message_text_quote(buf *b, const char *s, size_t len);

#endif
