/*
 * sandbox_shelf.c - the sandboxes a reload keeps (sandbox_shelf.h): a list
 * under a lock, a few entries a plugin, walked once per instance built.
 */
#include "sandbox_shelf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

typedef struct entry {
  struct entry *next;
  char *role, *name, *owner;
  unsigned worker;
  uint64_t digest;
  sandbox *sb;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *shelf;
static size_t taken;

/* FNV-1a, 64 bits: enough to tell a changed plugin from its old self. */
static uint64_t mix(uint64_t h, const void *data, size_t len)
{
  const unsigned char *p = data;

  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211u;
  return h;
}

/* A string and its end, so that "ab","c" and "a","bc" differ. */
static uint64_t mix_str(uint64_t h, const char *s)
{
  return s ? mix(h, s, strlen(s) + 1) : mix(h, "\xff", 1);
}

static uint64_t mix_u64(uint64_t h, uint64_t v)
{
  return mix(h, &v, sizeof v);
}

static uint64_t mix_file(uint64_t h, const char *path)
{
  char chunk[8192];
  size_t n;
  FILE *f = path ? fopen(path, "rbe") : NULL;

  /* Unreadable now: the plugin will not load either; differ from any
   * (digests are made on the loop thread only). */
  static uint64_t unreadable;

  if (!f) return mix_u64(h, ++unreadable);
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) h = mix(h, chunk, n);
  fclose(f);
  return h;
}

uint64_t shelf_digest(const config *cfg, const config_plugin *p)
{
  const sandbox_limits *l = &p->limits;
  uint64_t most = pipeline_call_output_max(cfg);
  uint64_t out = !l->output_limit || l->output_limit > most ? most
                                                            : l->output_limit;
  uint64_t h = 14695981039346656037u;

  h = mix_str(h, p->type->name);
  h = mix_str(h, p->filename);
  h = mix_file(h, p->filename);
  h = mix_str(h, p->lua_settings);
  h = mix_str(h, p->module_dirs);
  h = mix_u64(h, l->instruction_limit);
  h = mix_u64(h, l->cpu_limit_ms);
  h = mix_u64(h, l->memory_limit);
  h = mix_u64(h, out);
  h = mix_u64(h, l->input_limit);
  h = mix_u64(h, l->mcode_limit_kb);
  h = mix_u64(h, l->max_failures);
  h = mix_u64(h, l->restart_after_ms);
  if (p->role == PLUGIN_FILTER) {
    const config_filter *f = p->settings;
    h = mix_str(h, p->message_matcher);
    h = mix_u64(h, (uint64_t)f->mode);
    h = mix_u64(h, f->ticker_interval_ms);
  }
  return h;
}

uint64_t pipeline_config_digest(const config *cfg)
{
  uint64_t h = 14695981039346656037u;

  for (char **s = cfg->sources; s && *s; s++) {
    h = mix_str(h, *s);
    h = mix_file(h, *s);
  }
  for (size_t i = 0; i < cfg->nplugins; i++)
    if (cfg->plugins[i].type->flags & PLUGIN_SANDBOX)
      h = mix_u64(h, shelf_digest(cfg, &cfg->plugins[i]));
  return h;
}

size_t pipeline_reload_finish(void)
{
  return shelf_clear();
}

static bool same_key(const entry *e, const shelf_key *k)
{
  return e->worker == k->worker && strcmp(e->role, k->role) == 0 &&
         strcmp(e->name, k->name) == 0 && strcmp(e->owner, k->owner) == 0;
}

static void entry_free(entry *e)
{
  free(e->role);
  free(e->name);
  free(e->owner);
  free(e);
}

bool shelf_put(const shelf_key *key, uint64_t digest, sandbox *sb)
{
  entry *e = calloc(1, sizeof *e);

  sandbox_detach(sb);
  if (e) {
    e->role = strdup(key->role);
    e->name = strdup(key->name);
    e->owner = strdup(key->owner);
  }
  if (!e || !e->role || !e->name || !e->owner) {
    if (e) entry_free(e);
    sandbox_destroy(sb);
    return false;
  }
  e->worker = key->worker;
  e->digest = digest;
  e->sb = sb;
  pthread_mutex_lock(&lock);
  e->next = shelf;
  shelf = e;
  pthread_mutex_unlock(&lock);
  return true;
}

sandbox *shelf_take(const shelf_key *key, uint64_t digest)
{
  sandbox *sb = NULL;

  pthread_mutex_lock(&lock);
  for (entry **pe = &shelf; *pe; pe = &(*pe)->next) {
    entry *e = *pe;
    if (!same_key(e, key) || e->digest != digest) continue;
    *pe = e->next;
    sb = e->sb;
    entry_free(e);
    taken++;
    break;
  }
  pthread_mutex_unlock(&lock);
  return sb;
}

size_t shelf_clear(void)
{
  entry *e;
  size_t n;

  pthread_mutex_lock(&lock);
  e = shelf;
  shelf = NULL;
  n = taken;
  taken = 0;
  pthread_mutex_unlock(&lock);
  while (e) {
    entry *next = e->next;
    sandbox_destroy(e->sb);
    entry_free(e);
    e = next;
  }
  return n;
}
