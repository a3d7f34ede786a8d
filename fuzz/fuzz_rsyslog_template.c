/*
 * fuzz_rsyslog_template.c - rsyslog templates (lua_modules/rsyslog*.lua:
 * the template parser, the grammar and the scanner built from it) in the
 * real decoder, sandbox/decoders/rsyslog.lua, in a real sandbox.
 *
 * Input: [0] the zone (tz) and message_type, then the template, then NUL
 * and records separated by LF. A sandbox is created per input with settings
 * `return {template = "<the template>", tz = ...}` (the bytes as a Lua
 * string literal), as the config would make it: slow, a few hundred
 * execs/s, but exactly what lumberjit runs. It must load or refuse with a
 * reason; a decoder then decodes the records (sandbox_decode_many) under
 * the default limits, and every message it injects must be well-formed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_dir.h"
#include "fuzz_sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const zones[] = {"UTC", "+08:00", "Asia/Shanghai",
                                    "-00:30", "America/New_York", "Z",
                                    "+25:00", "nowhere"};

static char filename[512], modules[1024];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_sandbox_setup();
  if (!filename[0]) {
    snprintf(filename, sizeof filename, "%s/decoders/rsyslog.lua",
             data_dir_sandbox());
    snprintf(modules, sizeof modules, "%s", data_dir_modules());
  }
  if (size < 1) return 0;
  const char *tmpl = (const char *)data + 1;
  const char *end = (const char *)data + size;
  const char *nul = memchr(tmpl, 0, (size_t)(end - tmpl));
  size_t tlen = (size_t)((nul ? nul : end) - tmpl);

  buf settings = {0};
  if (!buf_append_str(&settings, "return {template = ")) abort();
  fuzz_lua_string(&settings, tmpl, tlen);
  if (!buf_appendf(&settings, ", tz = \"%s\"%s}", zones[data[0] & 7],
                   data[0] & 8 ? ", message_type = \"rsyslog\"" : "") ||
      !buf_append(&settings, "", 1))
    abort();

  sandbox_config cfg = {.name = "rsyslog", .filename = filename,
                        .kind = SANDBOX_DECODER, .settings = settings.data,
                        .module_dirs = modules};
  sandbox_limits_default(&cfg.limits);
  cfg.limits.quiet_rebuilds = true;
  char err[512] = "";
  sandbox *sb = sandbox_create(&cfg, fuzz_wd, err, sizeof err);
  buf_free(&settings);
  if (!sb) {
    if (!err[0]) abort(); /* a refusal says why */
    return 0;
  }

  /* The records: LF-separated, after the NUL. */
  msg_origin recs[64];
  size_t n = 0;
  for (const char *p = nul ? nul + 1 : end; p < end && n < 64;) {
    const char *lf = memchr(p, '\n', (size_t)(end - p));
    const char *stop = lf ? lf : end;
    recs[n] = (msg_origin){.input = "fuzz", .position = n, .bytes = p,
                             .len = (size_t)(stop - p)};
    n++;
    p = stop + 1;
  }
  msg_batch out = {0};
  sandbox_decode_many(sb, recs, n, &out, &fuzz_each);
  for (uint32_t i = 0; i < out.len; i++) fuzz_check_message(&out.msgs[i]);
  msg_batch_free(&out);
  sandbox_destroy(sb);
  return 0;
}
