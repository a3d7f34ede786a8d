/*
 * registry.h - the plugin types lumberjit knows, in one list. A new type
 * is a folder of its own (src/inputs/NAME, src/outputs/NAME) with its
 * plugin_type, and one line in registry.c (src/README.md says how).
 */
#ifndef LUMBERJIT_REGISTRY_H
#define LUMBERJIT_REGISTRY_H

#include "plugin_type.h"

/* Every type a configuration may name, NULL-ended, in the order --help
 * lists them. */
extern const plugin_type *const registry_types[];

#endif
