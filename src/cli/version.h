/*
 * version.h - what `lumberjit --version` prints: its own version and build
 * type, and the versions of the libraries in it, as `nginx -V` does, so a
 * bug report says what was running.
 */
#ifndef LUMBERJIT_VERSION_H
#define LUMBERJIT_VERSION_H

#include <stdio.h>

void version_print(FILE *f);

#endif
