/*
 * sandbox_env.c - the restricted environment of a sandboxed state.
 *
 * The state's globals table *is* the sandbox environment: there is no host
 * environment behind it to reach. We open only the safe standard libraries
 * and then take out what could escape or crash the process:
 * - io, package, debug: never opened; ffi: opened only for encoders, by
 *   sandbox_view.c, and kept in its upvalues; jit: opened (it switches the
 *   JIT compiler on and sets maxmcode) and then removed from the globals;
 * - os: only time, clock and date are kept;
 * - string.dump (also reachable through the shared string metatable, whose
 *   __index is the string table), newproxy (finalizers run outside any
 *   limit), getfenv/setfenv, dofile, loadfile;
 * - load/loadstring accept source text only: bytecode is refused, since a
 *   tampered dump can crash the VM;
 * - string.find, match, gmatch and gsub are pattern.c's, whose matcher the
 *   limits can stop (LuaJIT's backtracks in C out of any hook's reach).
 * require is ours: C modules linked into the binary (lpeg, cjson) and Lua
 * files from the module directories, loaded as text, cached in a table the
 * script cannot reach.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "pattern.h"
#include "sandbox_internal.h"

int luaopen_lpeg(lua_State *L);
int luaopen_cjson(lua_State *L);
int luaopen_cjson_safe(lua_State *L);

#define ZONEINFO_DIR "/usr/share/zoneinfo/"
#define MAX_MODULE_SIZE (4u << 20)
#define MAX_ZONEINFO_SIZE (256u << 10)

/* The registry key of require's cache. */
static const char loaded_key = 0;

/* Opened non-blocking and checked to be a regular file first: a FIFO or a
 * device named as a plugin or module would otherwise block or never end. */
char *sandbox_read_file(const char *path, size_t max, size_t *len, char *err,
                        size_t errlen)
{
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  char *data = NULL;
  size_t n = 0;

  if (fd < 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s is not a regular file", path);
    goto fail;
  }
  if ((uint64_t)st.st_size > max) {
    snprintf(err, errlen, "%s is larger than %zu bytes", path, max);
    goto fail;
  }
  data = malloc((size_t)st.st_size + 1);
  if (!data) {
    snprintf(err, errlen, "out of memory reading %s", path);
    goto fail;
  }
  while (n < (size_t)st.st_size) {
    ssize_t got = read(fd, data + n, (size_t)st.st_size - n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      snprintf(err, errlen, "cannot read %s: %s", path,
               got < 0 ? strerror(errno) : "it shrank while being read");
      goto fail;
    }
    n += (size_t)got;
  }
  close(fd);
  *len = n;
  return data;
fail:
  free(data);
  close(fd);
  return NULL;
}

/* Module and zone names are plain relative names: no "..", no absolute
 * paths, nothing but [A-Za-z0-9_+-] and the separator. */
static int is_plain_name(const char *s, char sep)
{
  if (!*s || *s == sep) return 0;
  for (const char *p = s; *p; p++) {
    if (*p == sep) {
      if (p[1] == sep || p[1] == '\0') return 0;
    } else if (!isalnum((unsigned char)*p) && !strchr("_+-", *p)) {
      return 0;
    }
  }
  return 1;
}

static int load_module_file(lua_State *L, sandbox *sb, const char *name)
{
  char path[4096], rel[512], err[256];
  const char *dirs = sb->module_dirs;

  if (strlen(name) >= sizeof rel - 5) return 0;
  for (size_t i = 0; name[i]; i++) rel[i] = name[i] == '.' ? '/' : name[i];
  snprintf(rel + strlen(name), 5, ".lua");
  while (*dirs) {
    size_t dlen = strcspn(dirs, ";");
    size_t len;
    char *src;
    if (dlen > 0 && dlen + strlen(rel) + 2 < sizeof path) {
      snprintf(path, sizeof path, "%.*s/%s", (int)dlen, dirs, rel);
      src = sandbox_read_file(path, MAX_MODULE_SIZE, &len, err, sizeof err);
      if (src) {
        int rc;
        lua_pushfstring(L, "@%s", path);
        rc = luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t");
        free(src);
        if (rc != 0) lua_error(L);
        return 1;
      }
      if (access(path, F_OK) == 0) /* there, but a FIFO or too big */
        return luaL_error(L, "require: %s", err);
    }
    dirs += dlen;
    if (*dirs == ';') dirs++;
  }
  return 0;
}

/* LPeg's patterns share one metatable: a __gc put there would run as a
 * finalizer, with hooks off, where no limit can stop it. */
static void lock_pattern_metatable(lua_State *L)
{
  lua_getfield(L, -1, "P");
  lua_pushliteral(L, "");
  lua_call(L, 1, 1);
  if (lua_getmetatable(L, -1)) {
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

static int sandbox_require(lua_State *L)
{
  static const struct { const char *name; lua_CFunction open; } builtin[] = {
    {"lpeg", luaopen_lpeg}, {"cjson", luaopen_cjson},
    {"cjson.safe", luaopen_cjson_safe}, {NULL, NULL}
  };
  sandbox *sb = sandbox_of(L);
  const char *name = luaL_checkstring(L, 1);
  int found = 0;

  lua_settop(L, 1);
  lua_pushlightuserdata(L, (void *)&loaded_key);
  lua_rawget(L, LUA_REGISTRYINDEX);             /* 2: cache */
  lua_getfield(L, 2, name);
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  for (int i = 0; builtin[i].name && !found; i++)
    if (strcmp(name, builtin[i].name) == 0) {
      lua_pushcfunction(L, builtin[i].open);
      found = 1;
    }
  if (!found) {
    if (!is_plain_name(name, '.'))
      return luaL_error(L, "require: invalid module name '%s'", name);
    found = load_module_file(L, sb, name);
  }
  if (!found)
    return luaL_error(L, "require: module '%s' not found in %s", name,
                      sb->module_dirs);
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  if (strcmp(name, "lpeg") == 0) lock_pattern_metatable(L);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, 2, name);
  return 1;
}

static int sandbox_read_zoneinfo(lua_State *L)
{
  const char *name = luaL_checkstring(L, 1);
  char path[512], err[256];
  size_t len;
  char *data;

  if (!is_plain_name(name, '/') || strlen(name) > 200) {
    lua_pushnil(L);
    lua_pushfstring(L, "invalid time zone name '%s'", name);
    return 2;
  }
  snprintf(path, sizeof path, ZONEINFO_DIR "%s", name);
  data = sandbox_read_file(path, MAX_ZONEINFO_SIZE, &len, err, sizeof err);
  if (!data) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushlstring(L, data, len);
  free(data);
  return 1;
}

static int sandbox_print(lua_State *L)
{
  sandbox *sb = sandbox_of(L);
  int n = lua_gettop(L);
  luaL_Buffer b;

  luaL_buffinit(L, &b);
  lua_pushfstring(L, "sandbox \"%s\" print: ", sb->name);
  luaL_addvalue(&b);
  for (int i = 1; i <= n; i++) {
    lua_getglobal(L, "tostring");
    lua_pushvalue(L, i);
    lua_call(L, 1, 1);
    if (!lua_isstring(L, -1))
      return luaL_error(L, "'tostring' must return a string to 'print'");
    if (i > 1) luaL_addchar(&b, '\t');
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  sandbox_count_output(L, sb, lua_objlen(L, -1));
  if (sb->log) sb->log(sb->log_ud, lua_tostring(L, -1));
  return 0;
}

/* Lua code run once in each new state, after the libraries are open and
 * before the plugin: it wraps load/loadstring so that only source text is
 * accepted (the originals stay in upvalues nobody can reach without the
 * debug library).
 *
 * It also replaces xpcall: LuaJIT runs a message handler with hooks off, so
 * a handler that loops could never be stopped. Ours calls the handler as
 * ordinary code once pcall has returned (so it sees the error value, not
 * the stack where it was raised); an error in it gives "error in error
 * handling", as in Lua.
 *
 * pairs returns a Lua step function rather than next itself, and the
 * global next is that function too: with LUAJIT_ENABLE_CHECKHOOK, a loop
 * over the builtin next that the JIT compiles (BC_ITERN, which `for k, v
 * in next, t` and pairs both make) never ends (LuaJIT issue #754), so a
 * plugin doing nothing wrong would lose its records to the CPU limit. The
 * loop then runs as ITERC. */
static const char prelude[] =
  "local load, error, pcall = load, error, pcall\n"
  "local function xpcall_result(handler, ok, ...)\n"
  "  if ok then return true, ... end\n"
  "  local handled, value = pcall(handler, (...))\n"
  "  return false, handled and value or 'error in error handling'\n"
  "end\n"
  "_G.xpcall = function(f, handler, ...)\n"
  "  return xpcall_result(handler, pcall(f, ...))\n"
  "end\n"
  "local next = next\n"
  "local function step(t, k) return next(t, k) end\n"
  "_G.next = step\n"
  "_G.pairs = function(t) return step, t, nil end\n"
  "_G.load = function(chunk, chunkname, mode, env)\n"
  "  if mode ~= nil and mode ~= 't' then\n"
  "    error(\"load: only source text can be loaded in the sandbox\", 2)\n"
  "  end\n"
  "  return load(chunk, chunkname, 't', env)\n"
  "end\n"
  "_G.loadstring = function(s, chunkname)\n"
  "  return load(s, chunkname, 't')\n"
  "end\n";

static void open_lib(lua_State *L, const char *name, lua_CFunction open)
{
  lua_pushcfunction(L, open);
  lua_pushstring(L, name);
  lua_call(L, 1, 0);
}

static void remove_fields(lua_State *L, const char *table,
                          const char *const *names)
{
  if (table) lua_getglobal(L, table);
  else lua_pushvalue(L, LUA_GLOBALSINDEX);
  for (; *names; names++) {
    lua_pushnil(L);
    lua_setfield(L, -2, *names);
  }
  lua_pop(L, 1);
}

/* jit.opt.start("maxmcode=N"): machine code is not allocated through the
 * state's allocator, so it is bounded here.
 *
 * loopunroll=60 (LuaJIT's default is 15): a plugin that calls an API
 * function of ours (read_message, record_find, ...) more than about five
 * times an item makes that function hot before the driver's loop is, and
 * the traces starting in it were abandoned ("loop unroll limit") until it
 * was blacklisted: no trace could then inline it, and the driver's loop
 * ran interpreted. Six read_message calls an item cost 7 times as much. */
static int set_mcode_limit(lua_State *L)
{
  sandbox *sb = sandbox_of(L);
  lua_getglobal(L, "jit");
  lua_getfield(L, -1, "opt");
  lua_getfield(L, -1, "start");
  lua_pushfstring(L, "maxmcode=%d", (int)sb->limits.mcode_limit_kb);
  lua_pushliteral(L, "loopunroll=60");
  lua_call(L, 2, 0);
  return 0;
}

static int open_env(lua_State *L)
{
  static const char *const globals_out[] = {
    "dofile", "loadfile", "getfenv", "setfenv", "newproxy", "jit", "module",
    "require", NULL
  };
  static const char *const os_out[] = {
    "execute", "exit", "getenv", "remove", "rename", "setlocale", "tmpname",
    NULL
  };
  static const char *const string_out[] = { "dump", NULL };

  open_lib(L, "", luaopen_base);
  open_lib(L, LUA_TABLIBNAME, luaopen_table);
  open_lib(L, LUA_STRLIBNAME, luaopen_string);
  open_lib(L, LUA_MATHLIBNAME, luaopen_math);
  open_lib(L, LUA_OSLIBNAME, luaopen_os);
  open_lib(L, LUA_BITLIBNAME, luaopen_bit);
  open_lib(L, LUA_JITLIBNAME, luaopen_jit);
  set_mcode_limit(L);

  remove_fields(L, NULL, globals_out);
  remove_fields(L, LUA_OSLIBNAME, os_out);
  remove_fields(L, LUA_STRLIBNAME, string_out);
  lua_getglobal(L, LUA_STRLIBNAME);
  pattern_open(L, -1, sandbox_pattern_step, NULL);
  lua_pop(L, 1);

  /* The string metatable cannot be read or changed from the sandbox. */
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 2);

  lua_pushlightuserdata(L, (void *)&loaded_key);
  lua_newtable(L);
  lua_rawset(L, LUA_REGISTRYINDEX);

  lua_register(L, "require", sandbox_require);
  lua_register(L, "read_zoneinfo", sandbox_read_zoneinfo);
  lua_register(L, "print", sandbox_print);

  if (luaL_loadbufferx(L, prelude, sizeof prelude - 1, "=prelude", "t") != 0)
    lua_error(L);
  lua_call(L, 0, 0);
  return 0;
}

/* The registry field keeping the FFI library for trusted chunks. */
#define TRUSTED_FFI_KEY "lumberjit.ffi"

void sandbox_push_trusted(lua_State *L, const char *source, size_t len,
                          const char *name)
{
  if (luaL_loadbufferx(L, source, len, name, "t") != 0) lua_error(L);
  /* Opened once per state: opening it again would start a new table of C
   * types, under the cdata the chunks before made. */
  lua_getfield(L, LUA_REGISTRYINDEX, TRUSTED_FFI_KEY);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushcfunction(L, luaopen_ffi);
    lua_call(L, 0, 1);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, TRUSTED_FFI_KEY);
  }
}

int sandbox_cpcall(lua_State *L, lua_CFunction fn, void *ud, const char *what,
                   char *err, size_t errlen)
{
  if (lua_cpcall(L, fn, ud) != 0) {
    snprintf(err, errlen, "cannot build %s: %s", what,
             lua_isstring(L, -1) ? lua_tostring(L, -1) : "not enough memory");
    lua_pop(L, 1);
    return -1;
  }
  return 0;
}

int sandbox_env_open(lua_State *L, char *err, size_t errlen)
{
  return sandbox_cpcall(L, open_env, NULL, "the sandbox environment", err,
                        errlen);
}
