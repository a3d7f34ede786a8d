/*
 * heap.h - how much freed memory the process keeps while records flow.
 *
 * glibc gives the free memory at the top of a heap back to the kernel as
 * soon as there is more than a little of it (128 KiB, raised a step at a
 * time as large blocks come and go). Under load lumberjit and librdkafka
 * free and allocate megabytes a second: output queues, jobs, librdkafka's
 * copy of every record and its compression buffers. Each time that memory
 * went back to the kernel it came again a page at a time, each page
 * faulted in and zeroed: feeding 1,000,000 records to Kafka took 78,000
 * page faults, where kcat took 17,000.
 *
 * So while the pipeline runs, up to its memory budget of freed memory
 * stays in the process, and blocks up to 32 MiB come from the heap rather
 * than from mmap calls of their own; once it is quiet, heap_release gives
 * the free memory back, so an idle collector stays small.
 */
#ifndef LUMBERJIT_HEAP_H
#define LUMBERJIT_HEAP_H

#include <stddef.h>

/* Keeps up to `bytes` of freed memory in the process. */
void heap_keep(size_t bytes);
/* Gives the free memory back to the kernel. */
void heap_release(void);

#endif
