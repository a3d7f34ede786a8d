/*
 * sandbox_shelf.h - the sandboxes a reload keeps for the next pipeline.
 *
 * A reload builds a new pipeline from the new config (main.c). The
 * decoders, encoders and filters whose plugin did not change (the same
 * file, bytes, settings, limits and, for a filter, matcher: shelf_digest)
 * keep running in it with their Lua state: as the old pipeline's workers
 * end, they put their sandboxes on the shelf under the plugin's role and
 * name, the plugin that owns the instance (a decoder's input, an
 * encoder's output) and the worker's index; the new workers take the one
 * under the same key and digest instead of loading the plugin again. What
 * no one took is destroyed by shelf_clear. Workers of both pipelines use
 * it from their own threads: it has its lock.
 */
#ifndef LUMBERJIT_SANDBOX_SHELF_H
#define LUMBERJIT_SANDBOX_SHELF_H

#include <stdint.h>

#include "config.h"
#include "sandbox.h"

typedef struct {
  const char *role;   /* "decoder", "encoder" or "filter" */
  const char *name;   /* the plugin's */
  const char *owner;  /* the input or output it serves; "" for a filter */
  unsigned worker;    /* the worker's index */
} shelf_key;

/* What makes two instances of plugin p the same, in cfg: a hash of its
 * type, file name and bytes, settings, module path, limits (as
 * pipeline_plugin_sandbox clamps them), and a filter's matcher, mode and
 * timer interval. A file that cannot be read hashes as never before. */
uint64_t shelf_digest(const config *cfg, const config_plugin *p);
/* Keeps sb (detached from its watchdog) under key; false when out of
 * memory (sb is destroyed then). */
bool shelf_put(const shelf_key *key, uint64_t digest, sandbox *sb);
/* The sandbox kept under key with this digest, taken off the shelf; NULL:
 * none. */
sandbox *shelf_take(const shelf_key *key, uint64_t digest);
/* Destroys what is left; returns how many were taken since the last
 * clear (for the reload's log line). */
size_t shelf_clear(void);

#endif
