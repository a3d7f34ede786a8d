/* help.c - see help.h. */
#include "help.h"

#include <string.h>

#include "config.h"
#include "registry.h"

/* "stdin_input, file_input, ...", wrapped at 72 columns after `col`. */
static void type_names(FILE *f, size_t col)
{
  for (const plugin_type *const *t = registry_types; *t; t++) {
    size_t len = strlen((*t)->name) + (t[1] ? 1 : 0);
    if (t != registry_types && col + 1 + len > 72) {
      fputs("\n", f);
      col = 0;
    } else if (t != registry_types) {
      fputs(" ", f);
      col++;
    }
    fprintf(f, "%s%s", (*t)->name, t[1] ? "," : "");
    col += len;
  }
}

void help_usage(const char *usage, FILE *f)
{
  fputs(usage, f);
  fputs("\nPlugin types (--help TYPE shows one's keys, --help lumberjit "
        "the global\nsettings'):\n", f);
  type_names(f, 0);
  fputs("\n", f);
}

int help_type(const char *name, bool markdown, FILE *f)
{
  const plugin_type *t = strcmp(name, "lumberjit") == 0
                             ? &config_global_settings
                             : config_type_find(registry_types, name);

  if (!t) {
    fprintf(stderr, "lumberjit: no plugin type is named '%s'; the types "
            "are:\n", name);
    type_names(stderr, 0);
    fputs("\n(and lumberjit, the global settings)\n", stderr);
    return -1;
  }
  plugin_type_help(t, markdown, f);
  return 0;
}
