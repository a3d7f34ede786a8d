/*
 * rate_cap.h - caps on bytes and records per second (an output's
 * max_bytes_per_second and max_messages_per_second), as token buckets.
 *
 * Each bucket holds at most one second's worth, so an output that was
 * idle may send one second's records at once, never more; over any longer
 * span the rate stays at the cap. A record larger than a second's bytes
 * goes once the bucket is full and leaves it in debt.
 */
#ifndef LUMBERJIT_RATE_CAP_H
#define LUMBERJIT_RATE_CAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t bytes_per_second, records_per_second; /* 0: no cap */
  double byte_tokens, record_tokens;
  uint64_t refilled_ns;
} rate_cap;

/* Full buckets at now_ns. */
void rate_cap_init(rate_cap *rc, uint64_t bytes_per_second,
                   uint64_t records_per_second, uint64_t now_ns);
/* Whether a record of len bytes may go at now_ns; if not, *wait_ms says
 * when the buckets will let it. */
bool rate_cap_allows(rate_cap *rc, size_t len, uint64_t now_ns,
                     uint64_t *wait_ms);
/* The record went: its bytes and itself come off the buckets. */
void rate_cap_spend(rate_cap *rc, size_t len);
/* A record spent did not go after all: back on the buckets. */
void rate_cap_refund(rate_cap *rc, size_t len);

#endif
