/*
 * record_template.h - a string made of a message's values, such as a Kafka
 * output's topic "logs-%{Type}" or key "%{Hostname}".
 *
 * "%{Name}" stands for a header (Uuid, Timestamp, Type, Logger, Severity,
 * Payload, EnvVersion, Pid, Hostname) or, for any other name, the first
 * value of the field of that name; "%{Fields[name]}" names a field
 * explicitly (one called "Type", say). Everything else is literal text. A
 * value the message lacks is empty; numbers are written in decimal (the
 * Timestamp in nanoseconds), booleans as true or false.
 */
#ifndef LUMBERJIT_RECORD_TEMPLATE_H
#define LUMBERJIT_RECORD_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "message.h"

typedef struct record_template record_template;

/* NULL with the reason in err when text is not a valid template. */
record_template *record_template_compile(const char *text, char *err,
                                         size_t errlen);
/* It has no %{...}: every message gives the same text. */
bool record_template_is_static(const record_template *t);
/* Appends the text for m; false when out of memory. */
bool record_template_render(const record_template *t, const msg *m, buf *b);
void record_template_free(record_template *t);

#endif
