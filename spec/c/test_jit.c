/*
 * test_jit.c - the JIT really runs in a sandbox, and the CPU limit stops a
 * loop it compiled, on whatever machine the test runs: on the arm64 build
 * under qemu (scripts/cross-arm64 test) it is LuaJIT's arm64 backend.
 *
 * test_sandbox.c warms a loop up before it runs away and trusts that it was
 * compiled; this test looks. It reaches into the sandbox (sandbox_internal.h,
 * for the state's lua_State only) to ask LuaJIT itself, through the jit
 * library the sandbox opens for its own use and hides from plugins: which
 * architecture it compiles for, which traces it made (jit.attach's "trace"
 * events and jit.util.traceinfo), and whether the runaway call left
 * compiled code ("texit" events) before the limit stopped it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "check.h"
#include "sandbox.h"
#include "sandbox_internal.h"

#if defined(__aarch64__)
#define JIT_ARCH "arm64"
#elif defined(__x86_64__)
#define JIT_ARCH "x64"
#else
#error "test_jit.c knows the JIT's name of arm64 and x86-64 only"
#endif

static char dir[] = "/tmp/lumberjit-test-jit-XXXXXX";
static char path[512];

/* sum's loop is the hot one: line 2 defines sum. */
static const char src[] =
  "local x = 0\n"
  "local function sum(n) for i = 1, n do x = x + i end end\n"
  "function process_message(rec)\n"
  "  if rec == 'warm' then sum(1e4) end\n"
  "  if rec == 'runaway' then sum(1e13) end\n"
  "  inject_message({Payload = rec})\n"
  "end\n";
#define SUM_LINE 2

static int loop_traces;  /* traces that stopped in sum and loop back */
static int trace_exits;  /* exits from compiled code to the interpreter */

/* Pushes the state's jit library, which luaopen_jit registered. */
static void push_jit(lua_State *L)
{
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "jit");
  lua_remove(L, -2);
}

/* Pushes jit.util, which luaopen_jit leaves to require (its preload). */
static void push_jit_util(lua_State *L)
{
  lua_getfield(L, LUA_REGISTRYINDEX, "_PRELOAD");
  lua_getfield(L, -1, "jit.util");
  lua_remove(L, -2);
  lua_call(L, 0, 1);
}

/* jit.attach's "trace" event: (what, trace number, function, pc, ...). */
static int on_trace(lua_State *L)
{
  lua_Debug ar;

  if (strcmp(luaL_checkstring(L, 1), "stop") != 0) return 0;
  lua_pushvalue(L, 3);
  if (!lua_getinfo(L, ">S", &ar) || ar.linedefined != SUM_LINE) return 0;
  push_jit_util(L);
  lua_getfield(L, -1, "traceinfo");
  lua_pushvalue(L, 2);
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "linktype");
  if (lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "loop") == 0) loop_traces++;
  return 0;
}

/* jit.attach's "texit" event: a trace left its machine code. */
static int on_exit(lua_State *L)
{
  (void)L;
  trace_exits++;
  return 0;
}

/* jit.attach(fn, event) in the sandbox's state. */
static void attach(lua_State *L, lua_CFunction fn, const char *event)
{
  push_jit(L);
  lua_getfield(L, -1, "attach");
  lua_pushcfunction(L, fn);
  lua_pushstring(L, event);
  lua_call(L, 2, 0);
  lua_pop(L, 1);
}

static msg_batch batch;

static sandbox_status decode(sandbox *sb, const char *rec, sandbox_result *res)
{
  msg_origin o = {.input = "test", .position = 1, .bytes = rec, .len = strlen(rec)};

  msg_batch_clear(&batch);
  sandbox_decode(sb, &o, &batch, res);
  return res->status;
}

int main(void)
{
  char err[512];
  sandbox_config cfg = {0};
  sandbox_result res;
  sandbox_watchdog *wd;
  sandbox *sb;
  lua_State *L;
  FILE *f;

  if (!mkdtemp(dir)) return 2;
  snprintf(path, sizeof path, "%s/hot.lua", dir);
  f = fopen(path, "w");
  if (!f) return 2;
  fputs(src, f);
  fclose(f);
  wd = sandbox_watchdog_start(1, err, sizeof err);
  if (!wd) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  cfg.name = "hot";
  cfg.filename = path;
  cfg.kind = SANDBOX_DECODER;
  cfg.module_dirs = LUMBERJIT_MODULE_DIR;
  sandbox_limits_default(&cfg.limits);
  cfg.limits.cpu_limit_ms = 50;
  cfg.limits.instruction_limit = 0;
  sb = sandbox_create(&cfg, wd, err, sizeof err);
  CHECK(sb != NULL);
  if (!sb) {
    fprintf(stderr, "%s\n", err);
    return check_summary();
  }
  L = sb->L;

  /* The JIT is on, and compiles for this machine. */
  push_jit(L);
  lua_getfield(L, -1, "arch");
  CHECK(strcmp(lua_tostring(L, -1), JIT_ARCH) == 0);
  printf("jit.arch %s\n", lua_tostring(L, -1));
  lua_getfield(L, -2, "status");
  lua_call(L, 0, 1);
  CHECK(lua_toboolean(L, -1));
  lua_pop(L, 3);

  /* A hot loop is compiled: a trace of sum's loop that loops back to itself. */
  attach(L, on_trace, "trace");
  for (int i = 0; i < 20; i++) CHECK(decode(sb, "warm", &res) == SANDBOX_OK);
  printf("looping traces of the hot loop: %d\n", loop_traces);
  CHECK(loop_traces >= 1);

  /* The same loop run away is stopped by the CPU limit, in compiled code:
   * only compiled code exits traces. */
  attach(L, on_exit, "texit");
  CHECK(decode(sb, "runaway", &res) == SANDBOX_FAILED);
  CHECK(res.limit == SANDBOX_LIMIT_CPU);
  CHECK_CONTAINS(res.reason, "cpu limit exceeded: limit 50 ms");
  printf("trace exits in the runaway call: %d\n", trace_exits);
  CHECK(trace_exits >= 1);

  /* The state was rebuilt and goes on. */
  CHECK(decode(sb, "fine", &res) == SANDBOX_OK);
  CHECK(batch.len == 1);

  sandbox_destroy(sb);
  sandbox_watchdog_stop(wd);
  msg_batch_free(&batch);
  unlink(path);
  rmdir(dir);
  return check_summary();
}
