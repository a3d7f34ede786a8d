/*
 * metrics_internal.h - what metrics.c and metrics_process.c share: the
 * lines of Prometheus's text format.
 */
#ifndef LUMBERJIT_METRICS_INTERNAL_H
#define LUMBERJIT_METRICS_INTERNAL_H

#include <stdbool.h>

#include "buf.h"
#include "pipeline.h"

/* "# HELP name help" and "# TYPE name type". */
bool metrics_head(buf *b, const char *name, const char *type,
                  const char *help);
/* key="value" after "{" (first) or ",", the value escaped. */
bool metrics_label(buf *b, const char *key, const char *value, bool first);
/* The decoders', encoders' and filters' families (metrics_plugins.c). */
bool metrics_plugins(buf *b, const pipeline_stats *st);
/* The process's own families (RSS, CPU, descriptors, start time, build),
 * read now from /proc and getrlimit; a figure that cannot be read is left
 * out. */
bool metrics_process(buf *b);

#endif
