/*
 * output_internal.h - what a sink's queue (output.c) and the fd writer's
 * transport (output_fd.c) share.
 */
#ifndef LUMBERJIT_OUTPUT_INTERNAL_H
#define LUMBERJIT_OUTPUT_INTERNAL_H

#include "output.h"

/* A queue's high-water mark until output_set_high_water. */
#define OUTPUT_HIGH_WATER (8u << 20)

/* ---- output.c ---- */

/* A record is acknowledged: it counts, and so does its latency. */
void output_count_written(output_sink *o, const output_record *r,
                          uint64_t now_us);
/* The front record is a run of lines written up to `upto`, inside it:
 * its whole lines before upto are acknowledged, and it starts after
 * them. */
void output_ack_run_front(output_sink *o, size_t upto, uint64_t now_us);
/* The owner's failed callback gets the record without its head (an
 * output_route); a run's lines each on their own. */
void output_fail_record(output_sink *o, const output_record *r,
                        const char *bytes, size_t len, const char *reason);

#endif
