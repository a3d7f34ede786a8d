/*
 * try_expect.h - --try's --expect GOLDEN and --update: a run's output
 * held against a golden file, or written as one.
 *
 * The output of a run is what --try prints on stdout: for each sample line
 * a block beginning `SOURCE:LINE: `. Blocks are matched by that name, in
 * order, and the lines of matched blocks are compared (try_expect.c).
 */
#ifndef LUMBERJIT_TRY_EXPECT_H
#define LUMBERJIT_TRY_EXPECT_H

#include <stdbool.h>

#include "buf.h"

typedef struct try_expect try_expect;

/* Starts a comparison with the file golden (read now), or, with update, a
 * run that writes it. NULL with the error said on stderr. */
try_expect *try_expect_open(const char *golden, bool update);

/* Takes the whole output of one sample line instead of stdout. */
void try_expect_add(try_expect *e, const buf *out);

/* At the end of a run whose every sample was read: prints the differences
 * on stdout, or writes the golden file; says the outcome on stderr.
 * Returns the exit status: 0 when equal or written, else 1. */
int try_expect_finish(try_expect *e);

void try_expect_free(try_expect *e);

#endif
