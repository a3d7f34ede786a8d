/* registry.c - see registry.h. */
#include "registry.h"

#include "config.h"
#include "file_input.h"
#include "file_output.h"
#include "generator_input.h"
#include "output_kafka.h"
#include "syslog_input.h"
#include "syslog_output.h"
#include "tail.h"

const plugin_type *const registry_types[] = {
  &stdin_input_type,
  &file_input_type,
  &tail_input_type,
  &syslog_input_type,
  &generator_input_type,
  &config_decoder_type,
  &config_encoder_type,
  &config_filter_type,
  &stdout_output_type,
  &file_output_type,
  &kafka_output_type,
  &syslog_output_type,
  NULL
};
