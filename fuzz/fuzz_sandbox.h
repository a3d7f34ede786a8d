/*
 * fuzz_sandbox.h - what the sandbox targets share: one watchdog, a temporary
 * directory for plugin files (removed at exit), a Lua string literal of any
 * bytes, and the check of the messages a decoder injected.
 */
#ifndef LUMBERJIT_FUZZ_SANDBOX_H
#define LUMBERJIT_FUZZ_SANDBOX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "json_message.h"
#include "message.h"
#include "message_text.h"
#include "sandbox.h"

static sandbox_watchdog *fuzz_wd;
static char fuzz_dir[64];
static char fuzz_plugin[128]; /* the plugin file a target wrote, or "" */

static inline void fuzz_sandbox_cleanup(void)
{
  if (fuzz_plugin[0]) unlink(fuzz_plugin);
  rmdir(fuzz_dir);
}

/* The watchdog (1 ms, as the specs use) and the directory, once. */
static inline void fuzz_sandbox_setup(void)
{
  char err[256];
  if (fuzz_wd) return;
  fuzz_wd = sandbox_watchdog_start(1, err, sizeof err);
  if (!fuzz_wd) abort();
  snprintf(fuzz_dir, sizeof fuzz_dir, "%s/lj-fuzz-sb-XXXXXX",
           access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
  if (!mkdtemp(fuzz_dir)) abort();
  atexit(fuzz_sandbox_cleanup);
}

/* Appends bytes as a Lua string literal: "..." with \ddd escapes for
 * everything but printable ASCII. */
static inline void fuzz_lua_string(buf *b, const char *s, size_t len)
{
  if (!buf_append(b, "\"", 1)) abort();
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      if (!buf_append(b, &s[i], 1)) abort();
    } else if (!buf_appendf(b, "\\%03u", c)) {
      abort();
    }
  }
  if (!buf_append(b, "\"", 1)) abort();
}

static inline bool span_ok(const msg *m, msg_span s)
{
  return s.off <= m->arena_len && s.len <= m->arena_len - s.off;
}

/* A message is well-formed: its spans lie in its arena, its fields'
 * values in its value table, and both writers take it. */
static inline void fuzz_check_message(const msg *m)
{
  const msg_span *h[] = {&m->type, &m->logger, &m->payload, &m->env_version,
                         &m->hostname};
  for (size_t i = 0; i < sizeof h / sizeof *h; i++)
    if (!span_ok(m, *h[i])) abort();
  for (uint32_t f = 0; f < m->nfields; f++) {
    const msg_field *fd = &m->fields[f];
    if (!span_ok(m, fd->name) || !span_ok(m, fd->representation) ||
        fd->type > MSG_BOOL || fd->first > m->nvalues ||
        fd->count > m->nvalues - fd->first)
      abort();
    if (fd->type == MSG_STRING || fd->type == MSG_BYTES)
      for (uint32_t v = 0; v < fd->count; v++)
        if (!span_ok(m, m->values[fd->first + v].s)) abort();
  }
  buf b = {0};
  if (!message_text(&b, m, "") || !json_message(&b, m)) abort();
  buf_free(&b);
}

/* Each record's result: one that failed or was rejected says why. */
static inline void fuzz_each_end(void *ud, size_t i, const sandbox_result *res)
{
  (void)ud;
  (void)i;
  if ((res->status == SANDBOX_FAILED || res->status == SANDBOX_REJECTED) &&
      !res->reason[0])
    abort();
}

static const sandbox_each fuzz_each = {.end = fuzz_each_end};

#endif
