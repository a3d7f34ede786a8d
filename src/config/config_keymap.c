/*
 * config_keymap.c - reads a plugin's table by its type's key maps
 * (plugin_type.h): the role's keys and the type's own, each checked for
 * its kind and bounds and given its default; unknown keys refused with
 * the nearest known one named. The same maps make --help's tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "config_internal.h"

/* The maps a type's table is read by, own keys first (so they replace the
 * role's of the same name); NULL-ended. */
static void type_maps(const plugin_type *t, const config_key *maps[5])
{
  size_t n = 0;

  if (t->keys) maps[n++] = t->keys;
  if (t->role == PLUGIN_INPUT) maps[n++] = config_input_keys;
  if (t->flags & PLUGIN_LINES) maps[n++] = config_lines_keys;
  if (t->role == PLUGIN_OUTPUT) maps[n++] = config_output_keys;
  if (t->flags & PLUGIN_SANDBOX) maps[n++] = config_sandbox_keys;
  maps[n] = NULL;
}

static const config_key *in_map(const config_key *map, const char *name)
{
  for (; map->name; map++)
    if (strcmp(map->name, name) == 0) return map;
  return NULL;
}

/* The key of t named name, or NULL; `first` says whether it is the one the
 * maps give first (not replaced by an earlier map's). */
static const config_key *find_key(const config_key *const *maps,
                                  const char *name)
{
  for (; *maps; maps++) {
    const config_key *k = in_map(*maps, name);
    if (k) return k;
  }
  return NULL;
}

static bool replaced(const config_key *const *maps, const config_key *k)
{
  return find_key(maps, k->name) != k;
}

static size_t edit_distance(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b), row[64];

  if (lb >= 64 || la >= 64) return 64;
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* Every key of the table on top of the stack must be known: "type" or one
 * of the maps'. With open_ended (a sandboxed plugin's settings), unknown
 * keys are allowed unless one is within two edits of a known key. */
static int check_keys(plugin_ctx *c, const config_key *const *maps,
                      bool with_type, bool open_ended)
{
  lua_State *L = c->ld->L;

  lua_pushnil(L);
  while (lua_next(L, -2)) {
    const char *key;
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      if (open_ended) continue;
      lua_pop(L, 1);
      return cfg_table_fail(c, "keys must be names");
    }
    key = lua_tostring(L, -1);
    if ((with_type && strcmp(key, "type") == 0) || find_key(maps, key))
      continue;
    for (const config_key *const *m = maps; *m; m++)
      for (const config_key *k = *m; k->name; k++)
        if (edit_distance(key, k->name) <= 2) {
          int rc = cfg_key_fail(c, key, "is unknown (did you mean '%s'?)",
                                k->name);
          lua_pop(L, 1);
          return rc;
        }
    if (!open_ended) {
      char names[1024] = "";
      int rc;
      for (const config_key *const *m = maps; *m; m++)
        for (const config_key *k = *m; k->name; k++)
          if (!replaced(maps, k))
            snprintf(names + strlen(names), sizeof names - strlen(names),
                     "%s%s", names[0] ? ", " : "", k->name);
      rc = cfg_key_fail(c, key, "is unknown (known: %s)", names);
      lua_pop(L, 1);
      return rc;
    }
  }
  return 0;
}

static int read_choice(plugin_ctx *c, const config_key *k, int *out)
{
  char *name = NULL, names[256] = "";
  int rc = 0;

  if (cfg_read_string(c, k->name, k->required, &name) != 0) return -1;
  for (int i = 0; k->choices[i]; i++) {
    if (strcmp(name ? name : k->def, k->choices[i]) == 0) {
      *out = i;
      free(name);
      return 0;
    }
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s\"%s\"",
             i == 0 ? "" : k->choices[i + 1] ? ", " : " or ", k->choices[i]);
  }
  rc = cfg_key_fail(c, k->name, "must be %s, not \"%s\"", names,
                    name ? name : k->def);
  free(name);
  return rc;
}

/* A field's name: false or "" for none. */
static int read_field(plugin_ctx *c, const config_key *k, char **out)
{
  lua_State *L = c->ld->L;
  bool none = cfg_get_key(L, k->name) == LUA_TBOOLEAN && !lua_toboolean(L, -1);

  lua_pop(L, 1);
  if (!none && cfg_read_string(c, k->name, false, out) != 0) return -1;
  if (!none && !*out && k->def && !(*out = strdup(k->def)))
    return cfg_key_fail(c, k->name, "cannot be stored: out of memory");
  if (*out && !**out) {
    free(*out);
    *out = NULL;
  }
  return 0;
}

static int read_number(plugin_ctx *c, const config_key *k, uint64_t *out)
{
  *out = k->def ? (uint64_t)strtod(k->def, NULL) : 0;
  if (cfg_read_count(c, k->name, k->max, out) != 0) return -1;
  if ((double)*out < k->min)
    return cfg_key_fail(c, k->name, "must be at least %.0f", k->min);
  return 0;
}

static int read_key(plugin_ctx *c, const config_key *k, void *base)
{
  void *at = (char *)base + k->offset;
  uint64_t n;

  switch (k->kind) {
  case KEY_STRING:
    if (cfg_read_string(c, k->name, k->required, (char **)at) != 0) return -1;
    if (!*(char **)at && k->def && !(*(char **)at = strdup(k->def)))
      return cfg_key_fail(c, k->name, "cannot be stored: out of memory");
    return 0;
  case KEY_LIST:
    return cfg_read_list(c, k->name, k->required, (char ***)at);
  case KEY_COUNT:
    return read_number(c, k, (uint64_t *)at);
  case KEY_SIZE:
    if (read_number(c, k, &n) != 0) return -1;
    *(size_t *)at = (size_t)n;
    return 0;
  case KEY_BOOL:
    *(bool *)at = k->def && strcmp(k->def, "true") == 0;
    return cfg_read_bool(c, k->name, (bool *)at);
  case KEY_CHOICE:
    return read_choice(c, k, (int *)at);
  case KEY_FIELD:
    return read_field(c, k, (char **)at);
  case KEY_CUSTOM:
    return k->read(c, base);
  }
  return 0;
}

/* Reads the keys of maps that are not replaced: the role's into the
 * plugin, the type's into its settings. */
static int read_maps(plugin_ctx *c, const config_key *const *maps,
                     config_plugin *p, void *settings)
{
  for (const config_key *const *m = maps; *m; m++)
    for (const config_key *k = *m; k->name; k++)
      if (!replaced(maps, k) &&
          read_key(c, k, k->in_plugin ? (void *)p : settings) != 0)
        return -1;
  return 0;
}

int config_read_plugin(loader *ld, config_plugin *p, const plugin_type *t)
{
  plugin_ctx c = {ld, p, t->name};
  const config_key *maps[5];

  p->type = t;
  p->role = t->role;
  type_maps(t, maps);
  if (t->settings_size && !(p->settings = calloc(1, t->settings_size)))
    return cfg_fail(ld, p->line, "out of memory");
  if (check_keys(&c, maps, true, t->flags & PLUGIN_SANDBOX) != 0 ||
      read_maps(&c, maps, p, p->settings) != 0)
    return -1;
  return t->finish ? t->finish(&c, p) : 0;
}

int cfg_read_keys(plugin_ctx *c, const config_key *keys, void *settings)
{
  const config_key *maps[2] = {keys, NULL};

  return check_keys(c, maps, false, false) != 0 ||
         read_maps(c, maps, NULL, settings) != 0 ? -1 : 0;
}

int cfg_read_table(plugin_ctx *c, const char *key, const char *shape,
                   const config_key *keys, void *settings)
{
  lua_State *L = c->ld->L;
  int t = cfg_get_key(L, key), rc;

  if (t != LUA_TTABLE) {
    lua_pop(L, 1);
    if (t == LUA_TNIL) return 0;
    return cfg_key_fail(c, key, "must be %s, not a %s", shape,
                        lua_typename(L, t));
  }
  rc = cfg_read_keys(c, keys, settings);
  lua_pop(L, 1);
  return rc == 0 ? 1 : -1;
}

static void free_key(const config_key *k, void *base)
{
  void *at = (char *)base + k->offset;

  switch (k->kind) {
  case KEY_STRING:
  case KEY_FIELD:
    free(*(char **)at);
    *(char **)at = NULL;
    break;
  case KEY_LIST:
    config_list_free(*(char ***)at);
    *(char ***)at = NULL;
    break;
  case KEY_CUSTOM:
    if (k->free) k->free(base);
    break;
  default:
    break;
  }
}

void cfg_free_keys(const config_key *keys, void *settings)
{
  for (const config_key *k = keys; settings && k->name; k++)
    free_key(k, settings);
}

void config_free_plugin(config_plugin *p)
{
  const config_key *maps[5];

  if (!p->type) return;
  type_maps(p->type, maps);
  for (const config_key *const *m = maps; *m; m++)
    for (const config_key *k = *m; k->name; k++)
      if (!replaced(maps, k))
        free_key(k, k->in_plugin ? (void *)p : p->settings);
  free(p->settings);
  p->settings = NULL;
}

/* ---- --help ---- */

static const char *kind_name(const config_key *k)
{
  static const char *const names[] = {
    [KEY_STRING] = "string", [KEY_LIST] = "string or list",
    [KEY_COUNT] = "number", [KEY_SIZE] = "bytes", [KEY_BOOL] = "boolean",
    [KEY_CHOICE] = "one of", [KEY_FIELD] = "field name or false",
    [KEY_CUSTOM] = "table",
  };

  return k->kind == KEY_CUSTOM && k->value ? k->value : names[k->kind];
}

/* What the key takes, with its choices or bounds. */
static void key_value(const config_key *k, char *out, size_t len)
{
  out[0] = '\0';
  if (k->kind == KEY_CHOICE) {
    for (size_t i = 0; k->choices[i]; i++)
      snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? ", " : "",
               k->choices[i]);
  } else if ((k->kind == KEY_COUNT || k->kind == KEY_SIZE) && k->min > 0) {
    snprintf(out, len, "%s, %.0f to %.0f", kind_name(k), k->min, k->max);
  } else if (k->kind == KEY_COUNT || k->kind == KEY_SIZE) {
    snprintf(out, len, "%s, up to %.0f", kind_name(k), k->max);
  } else {
    snprintf(out, len, "%s", kind_name(k));
  }
}

static void key_default(const config_key *k, bool markdown, char *out,
                        size_t len)
{
  if (k->required) snprintf(out, len, "required");
  else if (!markdown) {
    char def[96];
    key_default(k, true, def, sizeof def);
    snprintf(out, len, "default %s", def);
  }
  else if (k->def && k->kind == KEY_STRING) snprintf(out, len, "\"%s\"", k->def);
  else if (k->def) snprintf(out, len, "%s", k->def);
  else if (k->kind == KEY_BOOL) snprintf(out, len, "false");
  else if (k->kind == KEY_COUNT || k->kind == KEY_SIZE) snprintf(out, len, "0");
  else snprintf(out, len, "none");
}

void plugin_type_help(const plugin_type *t, bool markdown, FILE *f)
{
  const config_key *maps[5];

  type_maps(t, maps);
  if (markdown) {
    fprintf(f, "#### `%s`: %s\n\n", t->name, t->summary);
    if (t->flags & PLUGIN_SANDBOX)
      fprintf(f, "Any other key goes to the plugin's `read_config`.\n\n");
    fprintf(f, "| key | value | default | what it does |\n|---|---|---|---|\n");
  } else {
    fprintf(f, "%s (%s): %s\n", t->name, config_role_names[t->role],
            t->summary);
    if (t->flags & PLUGIN_SANDBOX)
      fprintf(f, "Any other key goes to the plugin's read_config.\n");
    fprintf(f, "\n");
  }
  for (const config_key *const *m = maps; *m; m++)
    for (const config_key *k = *m; k->name; k++) {
      char value[256], def[128];
      if (replaced(maps, k)) continue;
      key_value(k, value, sizeof value);
      key_default(k, markdown, def, sizeof def);
      if (markdown)
        fprintf(f, "| `%s` | %s | %s | %s |\n", k->name, value, def, k->help);
      else
        fprintf(f, "  %-28s %s; %s\n  %-28s %s\n", k->name, value, def, "",
                k->help);
    }
}
