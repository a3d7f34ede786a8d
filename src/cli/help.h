/*
 * help.h - `lumberjit --help [TYPE] [--markdown]`: the usage with the list
 * of plugin types, or one type's keys (plugin_type_help), from the
 * registry; `lumberjit` names the global settings.
 */
#ifndef LUMBERJIT_HELP_H
#define LUMBERJIT_HELP_H

#include <stdbool.h>
#include <stdio.h>

/* The types, "stdin_input, file_input, ...", after usage. */
void help_usage(const char *usage, FILE *f);
/* One type's keys; -1 (with the known types on stderr) when no type has
 * that name. */
int help_type(const char *name, bool markdown, FILE *f);

#endif
