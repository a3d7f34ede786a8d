/*
 * metrics.h - the counters of a running pipeline (pipeline_snapshot) as a
 * file in Prometheus's text format, rewritten every metrics_interval_ms
 * and once more at exit: node_exporter's textfile collector serves it as
 * it is, and `cat` shows how far each input and output got and what each
 * output holds (its queue, what a Kafka output's librdkafka holds, its
 * disk buffer) while a broker is away.
 *
 * The file is written whole beside its place and renamed over it, so a
 * reader never sees half of one.
 */
#ifndef LUMBERJIT_METRICS_H
#define LUMBERJIT_METRICS_H

#include <stddef.h>

#include "buf.h"
#include "pipeline.h"

/* The cause lumberjit_plugin_failures_total gives a failure by limit l
 * (sandbox_stats.failures): "error" for none (a Lua error), else the
 * limit's ("cpu", "instructions", ...). */
const char *metrics_failure_cause(sandbox_limit l);
/* A reload was tried (the cli): it is counted, with its outcome and the
 * time of the last that took, in lumberjit_config_* (as Prometheus names
 * its own). */
void metrics_note_reload(bool ok);
/* Appends the text of st to b; false when out of memory. */
bool metrics_format(buf *b, const pipeline_stats *st);
/* Writes st to path (through path.tmp); -1 with the reason in err. */
int metrics_write(const char *path, const pipeline_stats *st, char *err,
                  size_t errlen);

#endif
