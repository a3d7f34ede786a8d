/*
 * passthrough.h - records that no plugin touches skip the workers: an
 * input with no decoder, in a pipeline with no filters, whose outputs
 * each take every record or none (a message_matcher that needs no
 * message, as "TRUE"), as read: no encoder, no head to route it by (a
 * file, standard output). On the loop thread, each such record is copied
 * once, from the read buffer into each output's queue, where the worker
 * path would copy it into a job, a message and a collector, and hand the
 * read to another thread and back to do nothing with it. Where every such
 * output writes lines to an fd, a read's whole lines go on as runs
 * (output_commit_lines): one queue entry for the lot, and no copy at all
 * for a run of flush_bytes or more that nothing queued waits before.
 *
 * It keeps what the worker path keeps: the order of each source's records,
 * the checkpoint tickets (the read's ticket is the records'), a long
 * line's pieces truncated or dead-lettered as the input says, latency from
 * the read (or a benchmark's due time), and the same counters.
 */
#ifndef LUMBERJIT_PASSTHROUGH_H
#define LUMBERJIT_PASSTHROUGH_H

#include "pipeline_internal.h"

/* Once the outputs, filters and inputs are built: marks the outputs the
 * passthrough writes to and the inputs whose records pass through. */
int passthrough_plan(pipeline *pl, char *err, size_t errlen);
/* A record of src, whose input passes through (pl_input.passthrough). */
void passthrough_record(pl_source *src, const char *bytes, size_t len,
                        uint64_t position, unsigned piece);
/* count whole lines of src (input.h: input_handler.lines), when every
 * output it writes to takes them as runs (pipeline.pass_lines): one copy,
 * or none, and one record in each queue, for the lot. */
void passthrough_lines(pl_source *src, const char *bytes, size_t len,
                       size_t count, uint64_t position);
/* src's read was cut into records: its counts go to the pipeline's, and
 * the outputs write what it queued before the loop waits again (the
 * reads of 50 files one wake-up finds cost one write, not 50). */
void passthrough_read_done(pl_source *src);
void passthrough_free(pipeline *pl);

#endif
