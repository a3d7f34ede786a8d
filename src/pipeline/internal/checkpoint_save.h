/*
 * checkpoint_save.h - saving the pipeline's checkpoints after syncing the
 * output files they count on (see checkpoint_save.c).
 */
#ifndef LUMBERJIT_CHECKPOINT_SAVE_H
#define LUMBERJIT_CHECKPOINT_SAVE_H

#include "pipeline_internal.h"

/* Starts a save on the thread pool, unless one runs or nothing changed. */
void checkpoint_save_start(pipeline *pl);
/* Saves on this thread, after the save that runs, if any (the last one). */
void checkpoint_save_now(pipeline *pl);

#endif
