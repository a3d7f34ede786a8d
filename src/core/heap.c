/* heap.c - see heap.h. Only glibc's malloc has these knobs; elsewhere
 * the allocator keeps its own ways. */
#include "heap.h"

#include <stdlib.h> /* defines __GLIBC__ where it is glibc */

#ifdef __GLIBC__
#include <malloc.h>

/* The most glibc takes for M_MMAP_THRESHOLD on 64-bit machines (half its
 * largest per-thread heap). */
#define LARGEST_HEAP_BLOCK (32 << 20)

void heap_keep(size_t bytes)
{
  /* Setting either turns off glibc's own adjustment of both, so both are
   * set: without the second, blocks over 128 KiB (librdkafka's
   * compression buffers) would each be an mmap and a munmap. */
  mallopt(M_TRIM_THRESHOLD, bytes > (size_t)1 << 30 ? 1 << 30 : (int)bytes);
  mallopt(M_MMAP_THRESHOLD, LARGEST_HEAP_BLOCK);
}

void heap_release(void)
{
  malloc_trim(0);
}

#else

void heap_keep(size_t bytes)
{
  (void)bytes;
}

void heap_release(void) {}

#endif
