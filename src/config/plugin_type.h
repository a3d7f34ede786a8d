/*
 * plugin_type.h - how a plugin type describes itself: its name, its role,
 * the keys its table takes and the pipeline's part of it. A type is one
 * `const plugin_type` in its own folder (src/inputs/tail/tail_config.c),
 * listed once in src/registry/registry.c; the loader, --check's errors and
 * "did you mean", `lumberjit --help TYPE` and the README's key tables all
 * come from that one description.
 *
 * Keys are declared, as Fluent Bit's config_map declares them: a name, a
 * kind, where the value goes, its default as a config would write it, its
 * bounds and one line of help. The loader reads every declared key into
 * the type's settings (a struct of settings_size bytes it allocates and
 * frees), checks bounds and kinds, and refuses an unknown key, naming the
 * nearest known one. What a key's value means beyond that (an address to
 * parse, keys that exclude each other) is the type's finish function's.
 *
 *   static const config_key keys[] = {
 *     {"paths", KEY_LIST, offsetof(config_tail, paths), .required = true,
 *      .help = "glob patterns of the files to read"},
 *     {"rotate_wait_ms", KEY_COUNT, offsetof(config_tail, rotate_wait_ms),
 *      "5000", 0, 3600000, .help = "..."},
 *     {NULL}
 *   };
 */
#ifndef LUMBERJIT_PLUGIN_TYPE_H
#define LUMBERJIT_PLUGIN_TYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
  PLUGIN_INPUT,
  PLUGIN_DECODER,
  PLUGIN_ENCODER,
  PLUGIN_OUTPUT,
  PLUGIN_FILTER
} config_role;

extern const char *const config_role_names[]; /* by config_role */

typedef struct config config;
typedef struct config_plugin config_plugin;
/* A plugin's table being read (its Lua state, its file and line). */
typedef struct plugin_ctx plugin_ctx;

typedef enum {
  KEY_STRING,  /* char *, NULL when absent without a default */
  KEY_LIST,    /* char **, NULL-terminated; a string is a list of one */
  KEY_COUNT,   /* uint64_t, a whole number in [min, max] */
  KEY_SIZE,    /* size_t, the same */
  KEY_BOOL,    /* bool */
  KEY_CHOICE,  /* int: the index of the value in choices */
  KEY_FIELD,   /* char *: a message field's name; "" or false for none */
  KEY_CUSTOM   /* read by `read`, which also sets its default */
} config_key_kind;

typedef struct config_key {
  const char *name;
  config_key_kind kind;
  size_t offset;          /* of the value in the settings, or with
                             in_plugin in config_plugin */
  const char *def;        /* the default as a config writes it; NULL: none
                             (strings NULL, numbers 0, false) */
  double min, max;        /* KEY_COUNT, KEY_SIZE */
  const char *const *choices; /* KEY_CHOICE: the names, NULL-ended */
  bool required;
  bool in_plugin;         /* a key every type of the role has */
  /* KEY_CUSTOM: reads the key (absent too) into settings; -1 after
   * cfg_key_fail. `value` says what it takes, for the help. */
  int (*read)(plugin_ctx *c, void *settings);
  void (*free)(void *settings);
  const char *value;
  const char *help;
} config_key;

/* What a type is besides its keys (flags). */
#define PLUGIN_LINES 1u           /* an input of lines: max_line,
                                     long_lines, keep_cr */
#define PLUGIN_STDIN 2u           /* reads standard input: one at most */
#define PLUGIN_STDOUT 4u          /* writes standard output */
#define PLUGIN_NO_DEAD_LETTERS 8u /* cannot be dead_letter_output */
#define PLUGIN_SANDBOX 16u        /* a sandboxed Lua plugin: filename,
                                     limits, and any key for its settings */
#define PLUGIN_RESUMES 32u        /* an input of files that starts where
                                     its checkpoints (state_dir) say */

struct input_kind;      /* the pipeline's parts: src/pipeline/plugin.h */
struct output_kind;

typedef struct plugin_type {
  const char *name;       /* the value of `type` */
  config_role role;
  unsigned flags;
  const char *summary;    /* one line, for --help */
  const config_key *keys; /* its own, {NULL}-ended; NULL: none. A key that
                             is also one of the role's (in_plugin) replaces
                             it: another default, other bounds. */
  size_t settings_size;   /* the struct the keys' offsets are in */
  /* After the keys are read, the table still on top of the stack: rules
   * across keys; may adjust the settings. NULL: none. */
  int (*finish)(plugin_ctx *c, config_plugin *p);
  /* Once the whole file is read, global settings included. NULL: none. */
  int (*check)(plugin_ctx *c, const config *cfg, const config_plugin *p);
  /* The file it reads or writes, for the loader's checks that no input
   * reads a file lumberjit writes; NULL: none. */
  const char *(*reads_file)(const config_plugin *p);
  const char *(*writes_file)(const config_plugin *p);
  /* What the pipeline does with it, which the loader never looks into. */
  const struct input_kind *input;
  const struct output_kind *output;
} plugin_type;

/* The key maps of every type of a role, and of the sandboxed plugins
 * (config_roles.c). */
extern const config_key config_input_keys[], config_lines_keys[],
    config_output_keys[], config_sandbox_keys[];

/* ---- for a type's finish, check and custom keys ---- */

/* Sets the error "FILE:LINE: input 'x' (tail_input): key 'k' ..." (the
 * line of the key, or of the table) and returns -1. */
int cfg_key_fail(plugin_ctx *c, const char *key, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* The Lua state: the plugin's table is on top of its stack. */
struct lua_State *cfg_lua(plugin_ctx *c);
/* Pushes t[key] of the table on top, without metamethods; its Lua type. */
int cfg_get_key(struct lua_State *L, const char *key);
/* Reads of the table on top; each leaves *out as it was when the key is
 * absent and returns -1 after cfg_key_fail. */
int cfg_read_string(plugin_ctx *c, const char *key, bool required, char **out);
int cfg_read_count(plugin_ctx *c, const char *key, double max, uint64_t *out);
int cfg_read_bool(plugin_ctx *c, const char *key, bool *out);
int cfg_read_list(plugin_ctx *c, const char *key, bool required, char ***out);
/* Reads a nested table's keys (on top of the stack) by a key map, into
 * settings; errors name its keys as keys of the plugin. */
int cfg_read_keys(plugin_ctx *c, const config_key *keys, void *settings);
/* Reads the table at `key` by a key map into settings: 1 when read, 0
 * when the key is absent, -1 (after cfg_key_fail, naming `shape`: "a
 * table {cert=, key=}") when it is no table or a key of it is wrong. */
int cfg_read_table(plugin_ctx *c, const char *key, const char *shape,
                   const config_key *keys, void *settings);
/* Frees what a key map's reads allocated. */
void cfg_free_keys(const config_key *keys, void *settings);

/* ---- for --help ---- */

/* The type's keys (the role's, then its own) as a table: plain text for
 * a terminal, or the README's Markdown. */
void plugin_type_help(const plugin_type *t, bool markdown, FILE *f);

#endif
