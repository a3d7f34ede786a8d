/*
 * generator_config.c - generator_input's type: its keys (what each does:
 * generator_input.h).
 */
#include <stddef.h>

#include "generator_input.h"
#include "line_generator.h"

#define G(field) offsetof(config_generator, field)

/* Its records are the lines it makes, none longer than LINE_GENERATOR_MAX;
 * a template's placeholders are known ones, and format "template" has
 * one. */
static int finish(plugin_ctx *c, config_plugin *p)
{
  config_generator *g = p->settings;
  char why[256];

  p->max_line = LINE_GENERATOR_MAX;
  if (g->format == LINES_TEMPLATE && !g->template)
    return cfg_key_fail(c, "template", "is required with format \"template\"");
  if (g->template && g->format != LINES_TEMPLATE)
    return cfg_key_fail(c, "template", "goes with format \"template\"");
  if (g->template && line_template_check(g->template, why, sizeof why) != 0)
    return cfg_key_fail(c, "template", "%s", why);
  return 0;
}

static const config_key generator_keys[] = {
  {"format", KEY_CHOICE, G(format), "syslog", .choices = line_format_names,
   .help = "the lines: W1's Filebeat metrics, RFC 3164 syslog, nginx's "
           "combined log, or the template's"},
  {"template", KEY_STRING, G(template), NULL,
   .help = "with format \"template\": the line, with placeholders %{seq}, "
           "%{iso}, %{rfc3164}, %{clf}, %{word}, %{host}, %{program}, %{pid}, "
           "%{int}, %{ip} filled anew each line"},
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
