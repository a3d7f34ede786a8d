/*
 * json_message.h - a message as one JSON object in the Logstash /
 * Elasticsearch schema, written in C for encoders (the sandbox API's
 * inject_message_json; sandbox/encoders/json.lua).
 *
 * What it writes is what json.lua wrote in Lua, byte for byte (the plugin
 * harness keeps that Lua text as the reference the specs compare with):
 *   {"@timestamp":"2026-05-19T10:30:17.000Z","@version":"1",
 *    "message":...,"host":...,"type":...,"logger":...,"severity":N,
 *    "pid":N, then each field as a key of its own}
 * Absent headers are left out; Uuid and EnvVersion are not written. A field
 * named like a header key is written as "fields.NAME"; an array as a JSON
 * array; repeated names once per field. Strings are escaped as
 * lua_modules/json_string.lua does (valid UTF-8 passes; each maximal
 * ill-formed subpart of invalid UTF-8 becomes U+FFFD, utf8.h), so the
 * output is always valid JSON.
 * Numbers: integers without ".0" (%.14g, else %.17g, otherwise), NaN and
 * infinities as null.
 *
 * Done in C because in Lua every header and field became a Lua string
 * (interned, then swept) only to be copied again into the output.
 */
#ifndef LUMBERJIT_JSON_MESSAGE_H
#define LUMBERJIT_JSON_MESSAGE_H

#include <stdbool.h>

#include "buf.h"
#include "message.h"

/* Appends m's JSON object to b; false when memory ran out (b may then hold
 * part of it). */
bool json_message(buf *b, const msg *m);
/* Appends s as a JSON string, in quotes, escaped as above; false when
 * memory ran out. For other JSON lumberjit writes (the HTTP endpoint). */
bool json_quoted(buf *b, const char *s, size_t len);

#endif
