/*
 * test_config_keys.c - the key maps every registered type declares
 * (plugin_type.h) are sound: each key has its help, no '|' that would
 * break the README's tables, bounds that hold its default, a choice
 * default among its choices, one name once; and the sandbox limits'
 * declared defaults are the runtime's own (sandbox_limits_default).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "registry.h"
#include "sandbox.h"

static void check_key(const plugin_type *t, const config_key *k)
{
  CHECK(k->help && k->help[0] && !strchr(k->help, '|'));
  if (k->kind == KEY_COUNT || k->kind == KEY_SIZE) {
    double def = k->def ? strtod(k->def, NULL) : 0;
    CHECK(k->max > 0 && k->min <= k->max);
    CHECK(k->required || (def >= k->min && def <= k->max));
  }
  if (k->kind == KEY_CHOICE) {
    bool found = false;
    CHECK(k->choices && k->def);
    for (size_t i = 0; k->choices && k->choices[i]; i++)
      found |= k->def && strcmp(k->def, k->choices[i]) == 0;
    CHECK(found);
  }
  if (k->kind == KEY_CUSTOM) CHECK(k->read && k->value);
  /* A type's own keys go to its settings (the global settings' to the
   * config itself). */
  if (t != &config_global_settings && !k->in_plugin && k->kind != KEY_CUSTOM)
    CHECK(t->settings_size > 0);
}

static void check_map(const plugin_type *t, const config_key *keys)
{
  for (const config_key *k = keys; k && k->name; k++) {
    check_key(t, k);
    for (const config_key *j = keys; j != k; j++)
      CHECK(strcmp(j->name, k->name) != 0);
  }
}

static void test_types(void)
{
  for (const plugin_type *const *t = registry_types; *t; t++) {
    CHECK((*t)->name && (*t)->summary && !strchr((*t)->summary, '|'));
    CHECK(((*t)->role == PLUGIN_INPUT) == ((*t)->input != NULL));
    CHECK(((*t)->role == PLUGIN_OUTPUT) == ((*t)->output != NULL));
    CHECK(config_type_find(registry_types, (*t)->name) == *t);
    check_map(*t, (*t)->keys);
  }
  check_map(&config_global_settings, config_global_settings.keys);
  check_map(&config_decoder_type, config_input_keys);
  check_map(&config_decoder_type, config_lines_keys);
  check_map(&config_decoder_type, config_output_keys);
  check_map(&config_decoder_type, config_sandbox_keys);
}

static void test_sandbox_defaults(void)
{
  sandbox_limits l;
  size_t base = offsetof(config_plugin, limits);
  int n = 0;

  sandbox_limits_default(&l);
  for (const config_key *k = config_sandbox_keys; k->name; k++) {
    uint64_t v;
    if (k->kind != KEY_COUNT) continue;
    CHECK(k->offset >= base && k->offset < base + sizeof l);
    memcpy(&v, (const char *)&l + (k->offset - base), sizeof v);
    if (v != (uint64_t)strtod(k->def, NULL))
      fprintf(stderr, "%s: declared %s, sandbox_limits_default %llu\n",
              k->name, k->def, (unsigned long long)v);
    CHECK(v == (uint64_t)strtod(k->def, NULL));
    n++;
  }
  CHECK(n == 8);
}

int main(void)
{
  test_types();
  test_sandbox_defaults();
  return check_summary();
}
