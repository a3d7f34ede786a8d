/* rate_cap.c - see rate_cap.h. */
#include "rate_cap.h"

void rate_cap_init(rate_cap *rc, uint64_t bytes_per_second,
                   uint64_t records_per_second, uint64_t now_ns)
{
  rc->bytes_per_second = bytes_per_second;
  rc->records_per_second = records_per_second;
  rc->byte_tokens = (double)bytes_per_second;
  rc->record_tokens = (double)records_per_second;
  rc->refilled_ns = now_ns;
}

static double refill(double tokens, double per_second, double seconds)
{
  tokens += seconds * per_second;
  return tokens > per_second ? per_second : tokens;
}

bool rate_cap_allows(rate_cap *rc, size_t len, uint64_t now_ns,
                     uint64_t *wait_ms)
{
  double seconds = (double)(now_ns - rc->refilled_ns) / 1e9, wait_s = 0;
  double bps = (double)rc->bytes_per_second;
  double rps = (double)rc->records_per_second;

  if (!rc->bytes_per_second && !rc->records_per_second) return true;
  rc->refilled_ns = now_ns;
  if (bps > 0) {
    /* Enough for the record, or a full bucket for one larger than it. */
    double need = (double)len < bps ? (double)len : bps;
    rc->byte_tokens = refill(rc->byte_tokens, bps, seconds);
    if (rc->byte_tokens < need) wait_s = (need - rc->byte_tokens) / bps;
  }
  if (rps > 0) {
    rc->record_tokens = refill(rc->record_tokens, rps, seconds);
    if (rc->record_tokens < 1 && (1 - rc->record_tokens) / rps > wait_s)
      wait_s = (1 - rc->record_tokens) / rps;
  }
  if (wait_s <= 0) return true;
  *wait_ms = (uint64_t)(wait_s * 1000) + 1;
  return false;
}

void rate_cap_spend(rate_cap *rc, size_t len)
{
  if (rc->bytes_per_second) rc->byte_tokens -= (double)len;
  if (rc->records_per_second) rc->record_tokens -= 1;
}

void rate_cap_refund(rate_cap *rc, size_t len)
{
  if (rc->bytes_per_second) rc->byte_tokens += (double)len;
  if (rc->records_per_second) rc->record_tokens += 1;
}
