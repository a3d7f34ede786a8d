/*
 * fuzz_inject.c - inject_message's C side (src/runtime/sandbox_inject.c)
 * and the record readers (record_byte, record_find, record_decimal,
 * record_text, record_span: sandbox_record.c, sandbox_span.c) through a
 * real sandbox, with tables and positions the fuzzer chooses.
 *
 * At startup the target writes a decoder, PLUGIN below, to a temporary
 * directory; each input gets a new sandbox of it. (A state kept from
 * earlier inputs would make findings depend on the run's history; and
 * LuaJIT holds its trace IR buffer by a pointer biased below the
 * allocation, which LeakSanitizer's checks between inputs take for a leak
 * while the state lives: closed before the input ends, it is freed.)
 * Its process_record reads each record as a little program, byte by
 * byte: ops that set headers and fields to strings, numbers,
 * booleans, spans, tables with value_type and representation, arrays
 * (mixed and holed ones too), the readers' results at positions taken from
 * the bytes (inside, at the edges of and outside the record, whole or
 * not), and inject the message so far; wrong types and positions are meant
 * to reach inject_message's and the readers' checks. Some programs run
 * their calls in pcall, so a call goes on after an error.
 *
 * Input: records, each a length byte then that many bytes, decoded in one
 * batch (sandbox_decode_many). Each result that is not OK must say why,
 * and every injected message must be well-formed (fuzz_sandbox.h: spans
 * in its arena, both message writers take it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_dir.h"
#include "fuzz_sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char PLUGIN[] =
  "local stops = { record_stops(' '), record_stops('\\t=,\\0'),\n"
  "                record_stops(''), record_stops('\\255\\n') }\n"
  "local headers = { 'Type', 'Logger', 'Payload', 'EnvVersion', 'Hostname',\n"
  "                  'Timestamp', 'Severity', 'Pid', 'Uuid' }\n"
  "local specials = { 0/0, 1/0, -1/0, -0.0, 2^53, 2^63, -2^63, 2^31,\n"
  "                   -2^31 - 1, 0.5, 1e308, 5e-324 }\n"
  "local span = record_span()\n"
  "local len, pc\n"
  "\n"
  "-- The next byte of the program, 0 past its end.\n"
  "local function next_byte()\n"
  "  local b = record_byte(pc)\n"
  "  pc = pc + 1\n"
  "  return b or 0\n"
  "end\n"
  "\n"
  "-- A position from a byte: 0 .. len + 2, sometimes not whole.\n"
  "local function position()\n"
  "  local b = next_byte()\n"
  "  local p = b % (len + 3)\n"
  "  if b >= 250 then p = p + 0.5 end\n"
  "  return p\n"
  "end\n"
  "\n"
  "-- A string of the record's next bytes (they are skipped as program).\n"
  "local function str()\n"
  "  local n = next_byte() % 24\n"
  "  local from = math.min(pc, len + 1)\n"
  "  local to = math.min(from + n, len + 1)\n"
  "  pc = to\n"
  "  return record_text(from, to)\n"
  "end\n"
  "\n"
  "local value\n"
  "value = function(depth)\n"
  "  local k = next_byte() % 12\n"
  "  if k == 0 then return str()\n"
  "  elseif k == 1 then return (next_byte() - 128) * 2^(next_byte() % 64)\n"
  "  elseif k == 2 then return specials[next_byte() % #specials + 1]\n"
  "  elseif k == 3 then return next_byte() % 2 == 0\n"
  "  elseif k == 4 then\n"
  "    -- A span: positions as given, checked when inject_message reads it.\n"
  "    span[1], span[2] = position(), position()\n"
  "    return span\n"
  "  elseif k == 5 then return record_text(position(), position())\n"
  "  elseif k == 6 then return record_find(stops[next_byte() % #stops + 1], position())\n"
  "  elseif k == 7 then return record_decimal(position(), position())\n"
  "  elseif k == 8 then return record_byte(position())\n"
  "  elseif k == 9 and depth < 3 then\n"
  "    -- An array, of mixed types at times, holed at times.\n"
  "    local t, n = {}, next_byte() % 5\n"
  "    for i = 1, n do t[i + (next_byte() == 0 and 1 or 0)] = value(depth + 1) end\n"
  "    return t\n"
  "  elseif k == 10 and depth < 3 then\n"
  "    -- Heka's typed value: value_type 0..6 (5 and 6 are not types).\n"
  "    local t = { value = value(depth + 1), value_type = next_byte() % 7 }\n"
  "    if next_byte() % 2 == 1 then t.representation = value(depth + 1) end\n"
  "    return t\n"
  "  elseif k == 11 then return nil\n"
  "  end\n"
  "  return {}\n"
  "end\n"
  "\n"
  "function process_record(length)\n"
  "  len, pc = length, 1\n"
  "  local safe = next_byte() % 2 == 1\n"
  "  local call = safe and pcall or function(f, ...) return true, f(...) end\n"
  "  local m = { Fields = {} }\n"
  "  local injected = 0\n"
  "  while pc <= len and injected < 8 do\n"
  "    local op = next_byte() % 6\n"
  "    if op == 0 then m[headers[next_byte() % #headers + 1]] = value(0)\n"
  "    elseif op == 1 or op == 2 then m.Fields[str()] = value(0)\n"
  "    elseif op == 3 then\n"
  "      call(inject_message, m)\n"
  "      injected = injected + 1\n"
  "      if next_byte() % 2 == 0 then m = { Fields = {} } end\n"
  "    elseif op == 4 then\n"
  "      -- Fields that are not a table of fields.\n"
  "      local f = value(0)\n"
  "      if type(f) ~= 'table' or next_byte() % 4 == 0 then m.Fields = f end\n"
  "    else\n"
  "      -- A reader called with any arguments.\n"
  "      local r = next_byte() % 4\n"
  "      if r == 0 then call(record_text, value(2), value(2))\n"
  "      elseif r == 1 then call(record_find, value(2), value(2))\n"
  "      elseif r == 2 then call(record_decimal, value(2), value(2))\n"
  "      else call(record_byte, value(2)) end\n"
  "    end\n"
  "  end\n"
  "  call(inject_message, m)\n"
  "  return 0\n"
  "end\n";

static char modules[1024];

static sandbox *make(void)
{
  char err[512];
  sandbox_config cfg = {.name = "inject", .filename = fuzz_plugin,
                        .kind = SANDBOX_DECODER, .settings = "return {}",
                        .module_dirs = modules};
  sandbox_limits_default(&cfg.limits);
  /* Failed calls are expected; the plugin must not stop for them. */
  cfg.limits.max_failures = UINT64_MAX;
  cfg.limits.quiet_rebuilds = true;
  sandbox *sb = sandbox_create(&cfg, fuzz_wd, err, sizeof err);
  if (!sb) {
    fprintf(stderr, "fuzz_inject: %s\n", err);
    abort();
  }
  return sb;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!fuzz_plugin[0]) {
    fuzz_sandbox_setup();
    snprintf(fuzz_plugin, sizeof fuzz_plugin, "%s/inject.lua", fuzz_dir);
    FILE *f = fopen(fuzz_plugin, "w");
    if (!f || fputs(PLUGIN, f) < 0) abort();
    fclose(f);
    snprintf(modules, sizeof modules, "%s", data_dir_modules());
  }
  sandbox *sb = make();

  msg_origin recs[64];
  size_t n = 0;
  for (size_t i = 0; i < size && n < 64;) {
    size_t len = data[i++];
    if (len > size - i) len = size - i;
    recs[n] = (msg_origin){.input = "fuzz", .position = n,
                           .bytes = (const char *)data + i, .len = len};
    n++;
    i += len;
  }
  msg_batch out = {0};
  sandbox_decode_many(sb, recs, n, &out, &fuzz_each);
  for (uint32_t i = 0; i < out.len; i++) fuzz_check_message(&out.msgs[i]);
  msg_batch_free(&out);
  sandbox_destroy(sb);
  return 0;
}
