/*
 * sandbox_record.c - record_byte, record_find, record_stops,
 * record_decimal and record_text: a decoder reads the record it is decoding
 * by position, without a Lua string of it.
 *
 * Why: a decoder's process_message(record) gets the record as a Lua string,
 * which LuaJIT hashes, interns, allocates and later sweeps, once per record
 * (W3 lines: about a tenth of a decoder call). A decoder that defines
 * process_record(length) instead gets only the length, and reads the bytes
 * with record_byte(i), written in Lua over FFI so that the reads compile
 * into the decoder's own traces; record_find(stops, from) skips to the next
 * of a set of bytes (record_stops) in C, called through FFI, so a scan has
 * no loop of its own (LuaJIT aborts traces that meet loops of varying
 * length inside a function called from a loop), and record_decimal reads a
 * number the same way; record_text makes a string of a part of the record
 * where one is needed (a memo key, an error).
 *
 * Safety: as in sandbox_view.c, FFI is handed only to the trusted chunk
 * below and kept in its upvalues. The functions return numbers and strings,
 * never cdata, and read only within the current record's length, which is 0
 * outside a call (end_call clears it, before a failed call's rebuild runs
 * the plugin's top level), so a function kept from an earlier call reads
 * nothing.
 */
#include <stddef.h>

#include "sandbox_internal.h"

static const char record_source[] =
  "local ffi, at, size, len_offset, fns = ...\n"
  "ffi.cdef[[\n"
  "typedef struct { const uint8_t *bytes; int32_t len; } lj_record;\n"
  "typedef struct {\n"
  "  int32_t (*find)(const uint8_t *, int32_t, int32_t, const uint8_t *);\n"
  "  double (*decimal)(const uint8_t *, int32_t, int32_t);\n"
  "} lj_record_fns;\n"
  "]]\n"
  "if ffi.sizeof('lj_record') ~= size or ffi.offsetof('lj_record', 'len') ~= len_offset then\n"
  "  error('lj_record does not match the C layout')\n"
  "end\n"
  "local record = ffi.cast('const lj_record *', at)\n"
  "local fns = ffi.cast('const lj_record_fns *', fns)\n"
  "local find, decimal = fns.find, fns.decimal\n"
  "local string_of, new, type, error = ffi.string, ffi.new, type, error\n"
  "local sets = {}\n"
  "\n"
  "-- The byte at position i (1 = the first), nil outside the record.\n"
  "function record_byte(i)\n"
  "  if i >= 1 and i <= record.len then return record.bytes[i - 1] end\n"
  "  return nil\n"
  "end\n"
  "\n"
  "-- The bytes from position `from` to before `to` (span positions), all of\n"
  "-- the record without them.\n"
  "function record_text(from, to)\n"
  "  local len = record.len\n"
  "  if from == nil and to == nil then return string_of(record.bytes, len) end\n"
  "  if type(from) ~= 'number' or type(to) ~= 'number' or from % 1 ~= 0 or to % 1 ~= 0\n"
  "     or from < 1 or from > to or to > len + 1 then\n"
  "    error('record_text: positions not in the record (1 <= from <= to <= '\n"
  "          .. (len + 1) .. ')', 2)\n"
  "  end\n"
  "  return string_of(record.bytes + (from - 1), to - from)\n"
  "end\n"
  "\n"
  "-- A set of bytes for record_find, by number: cdata never reaches scripts.\n"
  "function record_stops(bytes)\n"
  "  if type(bytes) ~= 'string' then error('record_stops: give the bytes as a string', 2) end\n"
  "  local set = new('uint8_t[256]')\n"
  "  for k = 1, #bytes do set[bytes:byte(k)] = 1 end\n"
  "  sets[#sets + 1] = set\n"
  "  return #sets\n"
  "end\n"
  "\n"
  "-- The position of the first byte at or after `from` that is in the set,\n"
  "-- else the length + 1.\n"
  "function record_find(stops, from)\n"
  "  local set, len = sets[stops], record.len\n"
  "  if set == nil then error('record_find: not a set made by record_stops', 2) end\n"
  "  if not (from >= 1) then from = 1 end\n"
  "  if from > len then return len + 1 end\n"
  "  return find(record.bytes, len, from - 1, set) + 1\n"
  "end\n"
  "\n"
  "-- The whole number that the bytes from `from` to before `to` write in\n"
  "-- decimal digits (1 to 15 of them), else nil.\n"
  "function record_decimal(from, to)\n"
  "  if not (from >= 1 and from < to and to <= record.len + 1 and to - from <= 15) then\n"
  "    return nil\n"
  "  end\n"
  "  local value = decimal(record.bytes, from - 1, to - 1)\n"
  "  if value < 0 then return nil end\n"
  "  return value\n"
  "end\n";

/* record_find's loop: the 0-based position of the first byte at or after
 * from (< len) whose entry in set is set, else len. */
static int32_t find_in_set(const uint8_t *bytes, int32_t len, int32_t from,
                           const uint8_t *set)
{
  while (from < len && !set[bytes[from]]) from++;
  return from;
}

/* record_decimal's loop: the value of the digits from `from` to before `to`
 * (at most 15: exact in a double), or -1 when a byte is not a digit. */
static double decimal_of(const uint8_t *bytes, int32_t from, int32_t to)
{
  int64_t value = 0;

  for (; from < to; from++) {
    unsigned digit = (unsigned)bytes[from] - '0';
    if (digit > 9) return -1;
    value = value * 10 + digit;
  }
  return (double)value;
}

/* Handed to the chunk as data: a function pointer is not an object pointer. */
static const struct {
  int32_t (*find)(const uint8_t *, int32_t, int32_t, const uint8_t *);
  double (*decimal)(const uint8_t *, int32_t, int32_t);
} record_fns = {find_in_set, decimal_of};

static int open_record(lua_State *L)
{
  sandbox *sb = lua_touserdata(L, 1);

  sandbox_push_trusted(L, record_source, sizeof record_source - 1, "=record reader");
  lua_pushlightuserdata(L, &sb->record);
  lua_pushinteger(L, (lua_Integer)sizeof sb->record);
  lua_pushinteger(L, (lua_Integer)offsetof(sandbox_record, len));
  lua_pushlightuserdata(L, (void *)&record_fns);
  lua_call(L, 5, 0);
  return 0;
}

int sandbox_record_open(lua_State *L, sandbox *sb, char *err, size_t errlen)
{
  return sandbox_cpcall(L, open_record, sb, "record_byte", err, errlen);
}
