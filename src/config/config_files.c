/*
 * config_files.c - the files a configuration names, checked on every load
 * (config_internal.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_internal.h"

/* ---- the files inputs read and outputs write ----
 *
 * Checked on every load, so that a run fails at its start rather than
 * half-way: a file an input reads must exist and not be a directory (FIFOs
 * and devices are fine, and stat never blocks on them, as open could); a
 * file an output appends to needs its directory; and no input may read a
 * file lumberjit itself writes, which would feed its output back to it
 * without end. Files are compared by device and inode, so out.log,
 * ./out.log, a symlink and a hard link to it are one file; an output that
 * does not exist yet cannot be what an input reads, since those exist.
 * Character devices are exempt: reading and writing /dev/null is no loop.
 */

typedef struct {
  char what[300];     /* "the file output 'out' writes" */
  char writer[280];   /* "output 'out'" */
  const char *path;
  struct stat st;     /* the file's; if it does not exist, its directory's */
  bool exists;
  int line;
} written_file;

static int check_written(loader *ld, const char *who, const char *key,
                         int line, written_file *w)
{
  char *dir;
  int err, rc = 0;

  w->exists = stat(w->path, &w->st) == 0;
  if (w->exists)
    return S_ISDIR(w->st.st_mode)
      ? cfg_fail(ld, line, "%s: cannot open %s for appending: it is a directory "
             "(key '%s')", who, w->path, key)
      : 0;
  err = errno;
  if (!(dir = cfg_parent_dir(w->path))) return cfg_fail(ld, line, "out of memory");
  if (err != ENOENT)
    rc = cfg_fail(ld, line, "%s: cannot open %s for appending: %s (key '%s')",
              who, w->path, strerror(err), key);
  else if (stat(dir, &w->st) != 0)
    rc = cfg_fail(ld, line, "%s: cannot open %s for appending: its directory %s "
              "does not exist (key '%s')", who, w->path, dir, key);
  free(dir);
  return rc;
}

static const char *base_name(const char *path)
{
  const char *slash = strrchr(path, '/');

  return slash ? slash + 1 : path;
}

/* Whether two files lumberjit writes are one: the same device and inode,
 * or, not made yet, the same name in the same directory. Character
 * devices (/dev/null) take any number of writers. */
static bool same_written(const written_file *a, const written_file *b)
{
  if (a->exists != b->exists || a->st.st_dev != b->st.st_dev ||
      a->st.st_ino != b->st.st_ino)
    return false;
  return a->exists ? !S_ISCHR(a->st.st_mode)
                   : strcmp(base_name(a->path), base_name(b->path)) == 0;
}

/* Each file has one writer: two appending to one file would interleave
 * their records and acknowledge each other's writes. */
static int check_one_writer(loader *ld, const written_file *w, size_t nw)
{
  for (size_t i = 1; i < nw; i++)
    for (size_t j = 0; j < i; j++)
      if (same_written(&w[i], &w[j]))
        return cfg_fail(ld, w[i].line, "%s and %s write one file ('%s' and "
                        "'%s'): lumberjit must be a file's only writer",
                        w[j].writer, w[i].writer, w[j].path, w[i].path);
  return 0;
}

static int check_read(loader *ld, const config_plugin *p, const char *path,
                      int line, struct stat *st)
{
  if (stat(path, st) != 0)
    return cfg_fail(ld, line, "input '%s': cannot open %s: %s (key 'path')",
                p->name, path, strerror(errno));
  if (S_ISDIR(st->st_mode))
    return cfg_fail(ld, line, "input '%s': cannot read %s: it is a directory "
                "(key 'path')", p->name, path);
  return 0;
}

/* The state directory is made at start if it does not exist (mode 0700,
 * checkpoint.h), in a directory that must. */
static int check_state_dir(loader *ld, const char *path)
{
  int line = ld->globals_line ? cfg_key_line(ld, "state_dir",
                                             ld->globals_line) : 1;
  struct stat st;
  char *dir;
  int rc = 0;

  if (stat(path, &st) == 0)
    return S_ISDIR(st.st_mode) ? 0
      : cfg_fail(ld, line, "global settings 'lumberjit': key 'state_dir' "
                 "names %s, which is not a directory", path);
  if (errno != ENOENT)
    return cfg_fail(ld, line, "global settings 'lumberjit': key 'state_dir': "
                    "%s: %s", path, strerror(errno));
  if (!(dir = cfg_parent_dir(path))) return cfg_fail(ld, line, "out of memory");
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    rc = cfg_fail(ld, line, "global settings 'lumberjit': key 'state_dir' "
                  "names %s, which does not exist, and neither does its "
                  "directory %s to make it in", path, dir);
  free(dir);
  return rc;
}

int config_check_files(loader *ld, const config *cfg)
{
  written_file *w = calloc(cfg->nplugins + 1, sizeof *w);
  size_t nw = 0;
  int rc = 0;

  if (!w) return cfg_fail(ld, 1, "out of memory");
  for (size_t i = 0; i < cfg->nplugins && rc == 0; i++) {
    const config_plugin *p = &cfg->plugins[i];
    char who[256];
    if (!p->type->writes_file) continue;
    snprintf(w[nw].what, sizeof w[nw].what, "the file output '%s' writes",
             p->name);
    snprintf(who, sizeof who, "output '%s'", p->name);
    snprintf(w[nw].writer, sizeof w[nw].writer, "%s", who);
    w[nw].path = p->type->writes_file(p);
    w[nw].line = cfg_key_line(ld, "path", p->line);
    rc = check_written(ld, who, "path", w[nw].line, &w[nw]);
    nw++;
  }
  if (rc == 0 && !cfg->dead_letter_output) {
    snprintf(w[nw].what, sizeof w[nw].what, "the dead-letter file");
    snprintf(w[nw].writer, sizeof w[nw].writer, "the dead-letter path");
    w[nw].path = cfg->dead_letter_path;
    w[nw].line = ld->globals_line ? cfg_key_line(ld, "dead_letter_path",
                                                 ld->globals_line) : 1;
    rc = check_written(ld, "global settings 'lumberjit'", "dead_letter_path",
                       w[nw].line, &w[nw]);
    nw++;
  }
  if (rc == 0) rc = check_one_writer(ld, w, nw);
  if (rc == 0 && cfg->state_dir) rc = check_state_dir(ld, cfg->state_dir);
  for (size_t i = 0; i < cfg->nplugins && rc == 0; i++) {
    const config_plugin *p = &cfg->plugins[i];
    int line = cfg_key_line(ld, "path", p->line);
    const char *path;
    struct stat st;
    if (!p->type->reads_file) continue;
    path = p->type->reads_file(p);
    rc = check_read(ld, p, path, line, &st);
    for (size_t j = 0; j < nw && rc == 0; j++)
      if (w[j].exists && !S_ISCHR(st.st_mode) && st.st_dev == w[j].st.st_dev &&
          st.st_ino == w[j].st.st_ino)
        rc = cfg_fail(ld, line, "input '%s' reads %s ('%s' and '%s' are one file)",
                  p->name, w[j].what, path, w[j].path);
  }
  free(w);
  return rc;
}

