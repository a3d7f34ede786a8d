/*
 * try_internal.h - what try.c (one run) and try_watch.c (--watch) share.
 */
#ifndef LUMBERJIT_TRY_INTERNAL_H
#define LUMBERJIT_TRY_INTERNAL_H

#include "buf.h"
#include "try.h"

/* The plugins' files of the last config that loaded, for --watch, which
 * polls them from the moment it knows them: `loaded` runs before the
 * plugins load and the samples are read. */
typedef struct {
  char *decoder_file, *encoder_file;
  void (*loaded)(void *ud);
  void *ud;
} plugin_files;

/* One run over every sample; returns its exit status. stdin_copy: standard
 * input read before (NULL: read it now); pf: NULL, or told the plugins'
 * files each time the config loads. */
int try_once(const try_options *o, const buf *stdin_copy, plugin_files *pf);

/* Runs, then again on every change, until SIGINT or SIGTERM; returns the
 * last run's exit status. */
int try_watch(const try_options *o);

#endif
