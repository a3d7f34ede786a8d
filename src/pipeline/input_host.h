/*
 * input_host.h - what an input type may ask of the pipeline, and all it
 * may: the loop, its name and state, sources to read into, the checkpoint
 * store, dead letters, whether the inputs are held, and saying it is done.
 * The pipeline's structs stay its own (pipeline_internal.h); an input
 * type includes this and plugin.h, never that.
 *
 * An input (pl_input) is one configured instance; a source (pl_source) is
 * one thing it reads, each with its own order of records: standard input,
 * a file, a connection. A source reads with an `input` (input.h), which
 * hands what it reads to the pipeline; the type sets the reader's fd,
 * path and handlers and starts it.
 */
#ifndef LUMBERJIT_INPUT_HOST_H
#define LUMBERJIT_INPUT_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <uv.h>

#include "checkpoint.h"
#include "input.h"
#include "join.h"
#include "message.h"
#include "plugin.h"

/* ---- the input ---- */

const char *pl_input_name(const pl_input *pi);
uv_loop_t *pl_input_loop(const pl_input *pi);
/* The type's own state; NULL until set. */
void *pl_input_state(const pl_input *pi);
void pl_input_set_state(pl_input *pi, void *state);
/* While building only: the config being built, for its file's name in
 * errors and its global settings. */
const config *pl_input_config(const pl_input *pi);
/* Its sources may go to different workers, each keeping to one, so one
 * source's records keep their order (many files, many connections). */
void pl_input_spread(pl_input *pi);
/* The fields the router gives each message: the file read, the sender's
 * address, the input's name (NULL: none). -1 when out of memory. */
int pl_input_set_fields(pl_input *pi, const char *path_field,
                        const char *sender_field, const char *listener_field);
/* The multiline patterns' matcher the pipeline's sources share, made at
 * the first call; NULL when out of memory. */
join_matcher *pl_input_join_matcher(pl_input *pi);
/* State the inputs of its type share in this pipeline (tail_inputs'
 * directory watches): NULL at first; the kind's close_shared closes it.
 * NULL when out of memory. */
void **pl_input_kind_state(pl_input *pi);
/* The acknowledged offsets of files (checkpoint.h). */
checkpoint_store *pl_input_checkpoints(pl_input *pi);
/* The inputs are held now (an output is full): a new source starts held. */
bool pl_input_held(const pl_input *pi);
/* How long a stop may take before outputs give up. */
uint64_t pl_input_stop_timeout_ms(const pl_input *pi);
/* The stop is a reload's (pipeline_stop_for_reload): a listener leaves
 * its socket to the next pipeline (systemd_listen_keep) rather than
 * taking its backlog and closing it. */
bool pl_input_handing_over(const pl_input *pi);
/* A reload's stop: the configuration the next pipeline runs, for a
 * listener to see whether an input of it takes its socket, and so its
 * connections; NULL otherwise. Valid during the kind's stop only. */
const config *pl_input_next_config(const pl_input *pi);
/* Whether lumberjit writes the file sb is of: an input must never read
 * it. */
bool pl_input_writes(const pl_input *pi, const struct stat *sb);
/* Bytes that are no record (a malformed frame) go to the dead-letter
 * path, from `from` (NULL: no address), with the reason. */
void pl_input_dead_letter(pl_input *pi, const char *from, uint64_t position,
                          const char *bytes, size_t len, const char *reason);
/* It read all it will and its sources' jobs came back (after a stop, or
 * at the end of what it reads). */
void pl_input_done(pl_input *pi);
/* Whether pl_input_done was called. */
bool pl_input_is_done(const pl_input *pi);
/* Its sources now; pl_source_next goes on. */
pl_source *pl_input_sources(const pl_input *pi);

/* ---- its sources ---- */

/* A source of pi, reading nothing yet: set its reader's path or fd, then
 * start it. NULL when out of memory. */
pl_source *pl_source_new(pl_input *pi);
/* Unlinks and frees a source whose jobs came back (its kind's
 * source_finished). */
void pl_source_free(pl_source *src);
pl_source *pl_source_next(const pl_source *src);
pl_input *pl_source_owner(const pl_source *src);
/* Its reader; and the source of a reader. */
input *pl_source_reader(pl_source *src);
pl_source *pl_source_of(input *in);
/* The type's own per-source state (a file, a connection). */
void *pl_source_data(const pl_source *src);
void pl_source_set_data(pl_source *src, void *data);
/* Its records come from the file at its reader's path: with the input's
 * path_field they say so, and ckpt (NULL: none) holds their offsets until
 * their outputs acknowledge them. */
void pl_source_set_file(pl_source *src, checkpoint_source *ckpt);
/* The sender of the records read from now on (NULL: none), for the
 * input's sender_field. */
void pl_source_set_sender(pl_source *src, const char *from);
/* The records read so far go to the worker (after each read). */
void pl_source_chunk_done(pl_source *src);
/* Its multiline joiner (join_init it with a rule), and hands on the
 * record it holds (flush_ms passed). */
line_joiner *pl_source_joiner(pl_source *src);
void pl_source_flush(pl_source *src);

#endif
