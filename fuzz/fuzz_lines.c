/*
 * fuzz_lines.c - the line splitter of stdin, file and tail reads
 * (src/pipeline/input.c) against a reference model.
 *
 * Input: 4 bytes of settings, then the bytes read.
 *   [0] keep_cr, positions as byte offsets or sequence numbers
 *   [1] max_line: 1..40, or 1024
 *   [2..3] the seed of the cuts: the bytes arrive in random reads
 * The records (bytes, position, piece) must be those model() cuts from the
 * whole input by input.h's rules: a line ends at LF, a CR before it goes
 * unless keep_cr, a line longer than max_line goes in max_line pieces
 * numbered from 1, and a last line without LF is a record at the end.
 * The splitter is static in input.c: this file includes it, as the only
 * part of the pipeline it needs (the rest of input.c is never called).
 */
#include "../src/pipeline/input.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
  size_t off, len;       /* in the byte store */
  uint64_t position;
  unsigned piece;
} record;

typedef struct {
  record *r;
  size_t n, cap;
  buf bytes;
} records;

static void push(records *rs, const char *bytes, size_t len,
                 uint64_t position, unsigned piece)
{
  if (rs->n == rs->cap) {
    rs->cap = rs->cap ? 2 * rs->cap : 64;
    rs->r = realloc(rs->r, rs->cap * sizeof *rs->r);
    if (!rs->r) abort();
  }
  rs->r[rs->n++] = (record){rs->bytes.len, len, position, piece};
  if (!buf_append(&rs->bytes, bytes, len)) abort();
}

static void on_record(void *ud, input *in, const char *bytes, size_t len,
                      uint64_t position, unsigned piece)
{
  (void)in;
  push(ud, bytes, len, position, piece);
}

static void on_chunk_done(void *ud, input *in)
{
  (void)ud;
  (void)in;
}

/* The model: one line's content, whole or in pieces. */
static void model_line(records *rs, size_t max, bool is_offset,
                       uint64_t *seq, const char *p, size_t len,
                       uint64_t offset)
{
  ++*seq;
  if (len <= max) {
    push(rs, p, len, is_offset ? offset : *seq, 0);
    return;
  }
  unsigned piece = 0;
  for (size_t at = 0; at < len; at += max)
    push(rs, p + at, len - at < max ? len - at : max,
         is_offset ? offset + at : *seq, ++piece);
}

static void model(records *rs, size_t max, bool keep_cr, bool is_offset,
                  const char *data, size_t len)
{
  uint64_t seq = 0;
  size_t at = 0;

  while (at < len) {
    const char *nl = memchr(data + at, '\n', len - at);
    size_t n = nl ? (size_t)(nl - (data + at)) : len - at;
    size_t content = n;
    if (!keep_cr && content > 0 && data[at + content - 1] == '\r') content--;
    /* A last line without LF: a record unless nothing is left of it. */
    if (nl || content > 0)
      model_line(rs, max, is_offset, &seq, data + at, content, at);
    at += n + (nl != NULL);
  }
}

static uint32_t rng;
static uint32_t next(void)
{
  rng = rng * 1103515245u + 12345u;
  return rng >> 16;
}

static void print(const records *rs, const char *who)
{
  fprintf(stderr, "  %s:\n", who);
  for (size_t i = 0; i < rs->n; i++) {
    const record *r = &rs->r[i];
    fprintf(stderr, "    @%llu piece %u \"", (unsigned long long)r->position,
            r->piece);
    for (size_t j = 0; j < r->len; j++) {
      unsigned char c = (unsigned char)rs->bytes.data[r->off + j];
      fprintf(stderr, c >= 32 && c < 127 ? "%c" : "\\x%02x", c);
    }
    fprintf(stderr, "\"\n");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 4) return 0;
  bool keep_cr = data[0] & 1, is_offset = data[0] & 2;
  size_t max = data[1] < 250 ? 1 + data[1] % 40 : 1024;
  rng = (uint32_t)data[2] << 8 | data[3];
  const char *bytes = (const char *)data + 4;
  size_t len = size - 4;

  records got = {0}, want = {0};
  input in = {.name = "fuzz", .max_line = max, .is_offset = is_offset,
              .keep_cr = keep_cr};
  in.handler.record = on_record;
  in.handler.chunk_done = on_chunk_done;
  in.handler.ud = &got;
  for (size_t at = 0; at < len;) {
    size_t n = next() % 8 == 0 ? next() % 200 : 1 + next() % 17;
    if (n > len - at) n = len - at;
    char *read = malloc(n ? n : 1); /* its own: ASan sees a read past it */
    if (!read) abort();
    memcpy(read, bytes + at, n);
    split_lines(&in, read, n);
    free(read);
    at += n;
  }
  hand_on_partial(&in); /* the end of input */
  buf_free(&in.carry);

  model(&want, max, keep_cr, is_offset, bytes, len);
  bool ok = got.n == want.n;
  for (size_t i = 0; ok && i < got.n; i++) {
    const record *x = &got.r[i], *y = &want.r[i];
    ok = x->len == y->len && x->position == y->position &&
         x->piece == y->piece &&
         (!x->len || memcmp(got.bytes.data + x->off, want.bytes.data + y->off,
                            x->len) == 0);
  }
  if (!ok) {
    fprintf(stderr, "the records differ\n");
    print(&got, "input.c");
    print(&want, "model");
    abort();
  }
  free(got.r);
  free(want.r);
  buf_free(&got.bytes);
  buf_free(&want.bytes);
  return 0;
}
