/*
 * latency.h - a histogram of durations with bounded relative error, for
 * delivery latency percentiles (p50 ... p99.9, max) that cost a few
 * instructions per record and a fixed 4 KiB, whatever the count.
 *
 * Durations are in microseconds. Each power of two is split into 8
 * buckets, so a percentile is reported within 12.5% of its true value
 * (exact below 16 us); the maximum is kept exactly.
 */
#ifndef LUMBERJIT_LATENCY_H
#define LUMBERJIT_LATENCY_H

#include <stdint.h>

#define LATENCY_SUB 8
#define LATENCY_BUCKETS (64 * LATENCY_SUB)

typedef struct {
  uint64_t count, max_us;
  uint32_t buckets[LATENCY_BUCKETS];
} latency_hist;

void latency_add(latency_hist *h, uint64_t us);
/* n values of us at once (the records of one run). */
void latency_add_n(latency_hist *h, uint64_t us, uint64_t n);
/* The duration at quantile q (0 < q <= 1): the upper bound of the bucket
 * that holds it; 0 when nothing was added. */
uint64_t latency_quantile(const latency_hist *h, double q);

/* The quantiles reported everywhere, in milliseconds: p50, p95, p99,
 * p99.9 and the maximum. */
#define LATENCY_REPORTED 5
void latency_report(const latency_hist *h, double ms[LATENCY_REPORTED]);

#endif
