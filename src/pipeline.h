/*
 * pipeline.h - the running collector built from a config: inputs, their
 * decoders, the router (message matchers), the outputs' encoders and sinks,
 * and the dead-letter path, all on one libuv loop.
 *
 * Data flows one way: input -> decoder -> router -> encoder -> output.
 * Each input has its own decoder sandbox and each output its own encoder
 * sandbox, so that a later multi-threaded pipeline can give each worker its
 * own instances without sharing Lua states.
 */
#ifndef LUMBERJIT_PIPELINE_H
#define LUMBERJIT_PIPELINE_H

#include <uv.h>

#include "config.h"

typedef struct pipeline pipeline;

pipeline *pipeline_create(const config *cfg, uv_loop_t *loop, char *err,
                          size_t errlen);
/* Runs until every input has reached its end (or was stopped by SIGINT,
 * SIGTERM or a failed output) and every output has written what it holds.
 * Returns 0, or 1 when an input stopped on a read error, an output failed,
 * or a record could be neither written nor dead-lettered. */
int pipeline_run(pipeline *pl);
/* Closes everything, fsyncing output files; -1 when an fsync failed. */
int pipeline_destroy(pipeline *pl);
/* Loads every decoder and encoder once, as --check does, without opening
 * inputs or outputs. */
int pipeline_check(const config *cfg, char *err, size_t errlen);

#endif
