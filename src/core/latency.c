/* latency.c - see latency.h. */
#include "latency.h"

/* Bucket of v: values below 2 * LATENCY_SUB have their own; above, the
 * power of two and the next three bits below the top one. */
static unsigned bucket_of(uint64_t v)
{
  unsigned top;

  if (v < 2 * LATENCY_SUB) return (unsigned)v;
  top = 63u - (unsigned)__builtin_clzll(v);
  return (top - 2) * LATENCY_SUB + (unsigned)((v >> (top - 3)) & (LATENCY_SUB - 1));
}

/* The largest value of bucket b. */
static uint64_t bucket_top(unsigned b)
{
  unsigned top, sub;

  if (b < 2 * LATENCY_SUB) return b;
  top = b / LATENCY_SUB + 2;
  sub = b % LATENCY_SUB;
  return ((uint64_t)(LATENCY_SUB + sub + 1) << (top - 3)) - 1;
}

void latency_add_n(latency_hist *h, uint64_t us, uint64_t n)
{
  unsigned b = bucket_of(us);

  h->buckets[b < LATENCY_BUCKETS ? b : LATENCY_BUCKETS - 1] += n;
  h->count += n;
  if (us > h->max_us) h->max_us = us;
}

void latency_add(latency_hist *h, uint64_t us)
{
  latency_add_n(h, us, 1);
}

uint64_t latency_quantile(const latency_hist *h, double q)
{
  uint64_t want = (uint64_t)(q * (double)h->count + 0.5), seen = 0;

  if (h->count == 0) return 0;
  if (want == 0) want = 1;
  for (unsigned b = 0; b < LATENCY_BUCKETS; b++) {
    seen += h->buckets[b];
    if (seen >= want) {
      uint64_t top = bucket_top(b);
      return top < h->max_us ? top : h->max_us;
    }
  }
  return h->max_us;
}

void latency_report(const latency_hist *h, double ms[LATENCY_REPORTED])
{
  static const double q[] = {0.5, 0.95, 0.99, 0.999};

  for (int i = 0; i < 4; i++) ms[i] = latency_quantile(h, q[i]) / 1e3;
  ms[4] = h->max_us / 1e3;
}
