/*
 * generator_config.c - generator_input's type: its keys (what each does:
 * generator_input.h).
 */
#include <stddef.h>

#include "generator_input.h"
#include "line_generator.h"

#define G(field) offsetof(config_generator, field)

/* Its records are the lines it makes, none longer than LINE_GENERATOR_MAX. */
static int finish(plugin_ctx *c, config_plugin *p)
{
  (void)c;
  p->max_line = LINE_GENERATOR_MAX;
  return 0;
}

static const config_key generator_keys[] = {
  {"format", KEY_CHOICE, G(format), "syslog", .choices = line_format_names,
   .help = "the lines: W1's Filebeat metrics, RFC 3164 syslog, or nginx's "
           "combined log"},
  {"count", KEY_COUNT, G(count), "0", 0, 1e15,
   .help = "lines in all, then the input ends (0: until stopped)"},
  {"rate", KEY_COUNT, G(rate), "0", 0, 1e9,
   .help = "lines per second (0: as fast as they are taken)"},
  {"seed", KEY_COUNT, G(seed), "1", 0, 1e15,
   .help = "the random sequence: the same seed makes the same lines"},
  {NULL}
};

const plugin_type generator_input_type = {
  .name = "generator_input", .role = PLUGIN_INPUT,
  .summary = "makes varied log lines, for benchmarks and trying a pipeline",
  .keys = generator_keys, .settings_size = sizeof(config_generator),
  .finish = finish, .input = &generator_input_kind,
};
