/*
 * sandbox_alloc.c - the allocator of every sandboxed state: counts the bytes
 * the state holds and refuses what would go past its memory limit.
 *
 * A refusal makes LuaJIT raise LUA_ERRMEM; the state stays usable after a
 * full GC. The refused size is remembered so the call fails as a memory
 * limit even when the script catches the error. LuaJIT may pass ptr NULL
 * with a non-zero osize (a type tag, not a size): that counts as 0.
 *
 * The limit is enforced only inside protected calls: an error raised while
 * the runtime itself pushes a record or reads a result would have no pcall
 * to land in and would abort the process. Those allocations are bounded (a
 * record is at most input_limit bytes); an overrun they leave fails the
 * next call.
 */
#include <stdlib.h>

#include "sandbox_internal.h"

void *sandbox_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  sandbox_mem *mem = ud;
  void *p;

  if (ptr == NULL) osize = 0;
  if (nsize == 0) {
    free(ptr);
    mem->used -= osize;
    return NULL;
  }
  if (mem->enforce && mem->limit && nsize > osize &&
      mem->used - osize + nsize > mem->limit) {
    mem->refused_size = nsize;
    return NULL;
  }
  p = realloc(ptr, nsize);
  if (p == NULL) {
    mem->refused_size = nsize;
    return NULL;
  }
  mem->used = mem->used - osize + nsize;
  if (mem->used > mem->peak) mem->peak = mem->used;
  return p;
}
