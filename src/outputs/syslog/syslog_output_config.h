/*
 * syslog_output_config.h - reads a syslog_output's table into its
 * settings (syslog_output.h says what each key does): the row of
 * config_plugins.c's plugin types points here.
 */
#ifndef LUMBERJIT_SYSLOG_OUTPUT_CONFIG_H
#define LUMBERJIT_SYSLOG_OUTPUT_CONFIG_H

#include "config_internal.h"
#include "syslog_output.h"

extern const char *const syslog_output_keys[];
/* Fills p->syslog_output (allocated here, freed by config_free). */
int syslog_output_read_config(plugin_ctx *c, config_plugin *p);

#endif
