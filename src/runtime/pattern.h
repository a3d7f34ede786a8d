/*
 * pattern.h - Lua's string patterns (string.find, match, gmatch, gsub) with
 * a matcher that can be stopped.
 *
 * LuaJIT's matcher backtracks in C, where no hook runs: a pattern such as
 * ("a?"):rep(40)..("a"):rep(40) against 40 a's takes hours, and neither the
 * CPU limit nor SIGTERM can end it. This matcher has the same semantics and
 * error messages as LuaJIT 2.1's (its own code, written for this), and
 * counts its steps: every PATTERN_CHECK_STEPS steps it calls the state's
 * interrupt function, which may raise a Lua error to end the match. The
 * matcher holds no memory of its own, so a raised error leaks nothing.
 *
 * Plain searches cannot backtrack: find with its 4th argument goes to
 * LuaJIT's own string.find (which the JIT compiles), and a pattern without
 * special characters is searched for with memmem.
 */
#ifndef LUMBERJIT_PATTERN_H
#define LUMBERJIT_PATTERN_H

#include <lua.h>

#define PATTERN_CHECK_STEPS 4096

/* Called every PATTERN_CHECK_STEPS steps of a match; may raise an error. */
typedef void (*pattern_interrupt_fn)(lua_State *L, void *ud);

/* Replaces find, match, gmatch and gsub in the string table at index t
 * (strings' methods too: their metatable's __index is that table). */
void pattern_open(lua_State *L, int t, pattern_interrupt_fn fn, void *ud);

/* LPeg's VM (built from Debian's lpvm.c with this step added to its loop,
 * see CMakeLists.txt) counts its instructions down and calls
 * lumberjit_lpeg_interrupt every PATTERN_CHECK_STEPS; the embedder defines
 * it (the sandbox: its limits, as for patterns). */
extern _Thread_local unsigned lumberjit_lpeg_countdown;
void lumberjit_lpeg_interrupt(lua_State *L);
#define LUMBERJIT_LPEG_STEP(L)                                              \
  do {                                                                      \
    if (--lumberjit_lpeg_countdown == 0) lumberjit_lpeg_interrupt(L);       \
  } while (0)

#endif
