/*
 * try_expect.c - --expect and --update (try_expect.h).
 *
 * The golden file and the run's output are both cut into blocks at their
 * `SOURCE:LINE: ` lines, the same way, so that whatever a plugin prints
 * cuts both alike. A block of the run is matched with the next block of
 * the golden file that has its name: a sample line that only one side has
 * shows as added or removed, and the blocks after it still compare line by
 * line. The lines of a matched pair are diffed by a longest common
 * subsequence over what lies between their common first and last lines;
 * that is small, a block being one sample line's output, which is why the
 * files are not diffed whole.
 */
#include "try_expect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Unchanged lines shown around a difference, as diff -u shows 3. */
#define CONTEXT 2
/* The most cells of a pair's LCS table (4 bytes each): a pair whose
 * differing middles are larger shows as all removed, then all added. */
#define MAX_CELLS ((uint64_t)1 << 22)

typedef struct {
  const char *s;
  size_t len;
  size_t cmp;  /* how much of it is compared: compared_len() */
} text_line;

/* Lines [first, first + count) of a side, the first beginning with its
 * name, `SOURCE:LINE:`, keylen bytes (0: lines before any name). */
typedef struct {
  size_t first, count, keylen;
} block;

/* The golden file or the run's output. */
typedef struct {
  buf text;
  text_line *lines;
  size_t nlines, lines_cap;
  block *blocks;
  size_t nblocks, blocks_cap;
} side;

/* One step of a pair's diff: '=', '-' (a golden line) or '+' (a line of
 * the run); a and b are the lines of each side it is at, in the block. */
typedef struct {
  char op;
  size_t a, b;
} edit;

struct try_expect {
  const char *golden;
  bool update;
  bool out_of_memory;
  size_t added;      /* sample lines run */
  side want, got;    /* the golden file, the run */
};

static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
  size_t want = *cap ? *cap * 2 : 64;
  void *p;

  if (n < *cap) return true;
  p = realloc(*v, want * size);
  if (!p) return false;
  *v = p;
  *cap = want;
  return true;
}

/* 0, or the errno of reading path whole into b. */
static int read_file(const char *path, buf *b)
{
  FILE *f = fopen(path, "rb");
  char chunk[65536];
  size_t n;
  int err = 0;

  if (!f) return errno;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    if (!buf_append(b, chunk, n)) {
      err = ENOMEM;
      break;
    }
  if (!err && ferror(f)) err = errno ? errno : EIO;
  fclose(f);
  return err;
}

/* The length of `SOURCE:LINE:` when the line begins a block: it is not
 * indented and has `:DIGITS: ` after a source; else 0. */
static size_t key_len(const char *s, size_t len)
{
  if (!len || s[0] == ' ') return 0;
  for (size_t i = 1; i < len; i++) {
    size_t j = i + 1;
    if (s[i] != ':') continue;
    while (j < len && s[j] >= '0' && s[j] <= '9') j++;
    if (j > i + 1 && j + 1 < len && s[j] == ':' && s[j + 1] == ' ')
      return j + 1;
  }
  return 0;
}

/* How much of a line is compared. A limit's failure reads `... limit
 * exceeded: limit N, used ..., at ...`: what the call used and where it was
 * stopped vary from run to run (CPU time, and the line a loop was in when
 * the watchdog fired), so only what comes before is compared, for every
 * limit alike. */
static size_t compared_len(const char *s, size_t len)
{
  static const char mark[] = "limit exceeded: limit ";
  const size_t n = sizeof mark - 1;

  for (size_t i = 0; i + n <= len; i++) {
    if (memcmp(s + i, mark, n) != 0) continue;
    for (size_t j = i + n; j + 1 < len; j++)
      if (s[j] == ',' && s[j + 1] == ' ') return j;
    break;
  }
  return len;
}

static bool same_line(const text_line *x, const text_line *y)
{
  return x->cmp == y->cmp && memcmp(x->s, y->s, x->cmp) == 0;
}

/* Cuts a side's text into lines and blocks. */
static bool split(side *sd)
{
  const char *p = sd->text.data, *end = p + sd->text.len;

  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    size_t keylen = key_len(p, len);

    if (!grow((void **)&sd->lines, &sd->lines_cap, sd->nlines,
              sizeof *sd->lines))
      return false;
    sd->lines[sd->nlines] = (text_line){p, len, compared_len(p, len)};
    if (keylen || !sd->nblocks) {
      if (!grow((void **)&sd->blocks, &sd->blocks_cap, sd->nblocks,
                sizeof *sd->blocks))
        return false;
      sd->blocks[sd->nblocks++] = (block){sd->nlines, 0, keylen};
    }
    sd->blocks[sd->nblocks - 1].count++;
    sd->nlines++;
    p = nl ? nl + 1 : end;
  }
  return true;
}

static bool same_key(const side *x, const block *bx, const side *y,
                     const block *by)
{
  return bx->keylen == by->keylen &&
         memcmp(x->lines[bx->first].s, y->lines[by->first].s,
                bx->keylen) == 0;
}

static void put_line(char sign, const text_line *l)
{
  putchar(sign);
  fwrite(l->s, 1, l->len, stdout);
  putchar('\n');
}

/* `GOLDEN:LINE: SOURCE:N: what`: a compiler's way, so that an editor
 * jumps to the golden file's line (and can to the sample's). */
static void put_head(const try_expect *e, size_t golden_line,
                     const side *sd, const block *b, const char *what)
{
  printf("%s:%zu: ", e->golden, golden_line);
  if (b->keylen)
    fwrite(sd->lines[b->first].s, 1, b->keylen, stdout);
  else
    fputs("(before the first sample line)", stdout);
  printf(" %s\n", what);
}

/* A block only one side has, every line signed. */
static void put_whole(const try_expect *e, size_t golden_line,
                      const side *sd, const block *b, char sign,
                      const char *what)
{
  put_head(e, golden_line, sd, b, what);
  for (size_t i = 0; i < b->count; i++)
    put_line(sign, &sd->lines[b->first + i]);
}

/* The diff of lines a[0..n) and b[0..m) appended at ed: by their longest
 * common subsequence, or, when its table would be too large, all of a
 * removed, then all of b added. Returns the edits written. */
static size_t diff_middle(const text_line *a, size_t n, const text_line *b,
                          size_t m, size_t a0, size_t b0, edit *ed)
{
  uint32_t *lcs = NULL;
  size_t i = 0, j = 0, k = 0, w = m + 1;

  if ((uint64_t)(n + 1) * (uint64_t)(m + 1) <= MAX_CELLS)
    lcs = calloc((n + 1) * w, sizeof *lcs);
  /* lcs[i * w + j]: the LCS length of a[i..] and b[j..]. */
  for (size_t x = n; lcs && x-- > 0;)
    for (size_t y = m; y-- > 0;)
      lcs[x * w + y] = same_line(&a[x], &b[y])
                           ? lcs[(x + 1) * w + y + 1] + 1
                           : lcs[(x + 1) * w + y] > lcs[x * w + y + 1]
                                 ? lcs[(x + 1) * w + y]
                                 : lcs[x * w + y + 1];
  while (lcs && i < n && j < m) {
    if (same_line(&a[i], &b[j]))
      ed[k++] = (edit){'=', a0 + i++, b0 + j++};
    else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])
      ed[k++] = (edit){'-', a0 + i++, b0 + j};
    else
      ed[k++] = (edit){'+', a0 + i, b0 + j++};
  }
  while (i < n) ed[k++] = (edit){'-', a0 + i++, b0 + j};
  while (j < m) ed[k++] = (edit){'+', a0 + i, b0 + j++};
  free(lcs);
  return k;
}

/* Prints the hunks of a pair's edits: each run of changes with CONTEXT
 * lines around it, runs closer than twice that joined, each under its
 * head. */
static void put_hunks(const try_expect *e, const block *wb, const block *gb,
                      const edit *ed, size_t n)
{
  const text_line *a = e->want.lines + wb->first;
  const text_line *b = e->got.lines + gb->first;
  size_t p = 0;

  while (p < n) {
    size_t start, q, end;
    while (p < n && ed[p].op == '=') p++;
    if (p == n) return;
    start = p > CONTEXT ? p - CONTEXT : 0;
    for (q = p;;) {
      size_t r;
      while (q < n && ed[q].op != '=') q++;
      for (r = q; r < n && ed[r].op == '='; r++) {}
      if (r == n || r - q > 2 * CONTEXT) break;
      q = r;
    }
    end = q + CONTEXT < n ? q + CONTEXT : n;
    /* The line named is the first changed: where an editor should go. */
    put_head(e, wb->first + ed[p].a + 1, &e->got, gb, "differs:");
    for (size_t k = start; k < end; k++)
      put_line(ed[k].op == '=' ? ' ' : ed[k].op,
               ed[k].op == '+' ? &b[ed[k].b] : &a[ed[k].a]);
    p = end;
  }
}

/* Compares a pair of blocks of the same name; prints its differences.
 * 1 when they differ, 0 when not, -1 out of memory. */
static int diff_pair(const try_expect *e, const block *wb, const block *gb)
{
  const text_line *a = e->want.lines + wb->first;
  const text_line *b = e->got.lines + gb->first;
  size_t n = wb->count, m = gb->count, pre = 0, suf = 0, k = 0;
  edit *ed;

  while (pre < n && pre < m && same_line(&a[pre], &b[pre])) pre++;
  if (pre == n && pre == m) return 0;
  while (suf < n - pre && suf < m - pre &&
         same_line(&a[n - 1 - suf], &b[m - 1 - suf]))
    suf++;
  ed = malloc((n + m) * sizeof *ed);
  if (!ed) return -1;
  for (; k < pre; k++) ed[k] = (edit){'=', k, k};
  k += diff_middle(a + pre, n - pre - suf, b + pre, m - pre - suf, pre, pre,
                   ed + k);
  for (size_t s = suf; s > 0; s--)
    ed[k++] = (edit){'=', n - s, m - s};
  put_hunks(e, wb, gb, ed, k);
  free(ed);
  return 1;
}

/* The golden file's line a block would stand at: that of its next block. */
static size_t golden_line_at(const try_expect *e, size_t w)
{
  return (w < e->want.nblocks ? e->want.blocks[w].first : e->want.nlines) + 1;
}

/* Prints the differences; the number of blocks that differ, or -1 out of
 * memory. */
static long compare(const try_expect *e)
{
  const side *want = &e->want, *got = &e->got;
  size_t w = 0;
  long differ = 0;

  for (size_t g = 0; g < got->nblocks; g++) {
    const block *gb = &got->blocks[g];
    size_t at = w;
    int rc;

    while (at < want->nblocks && !same_key(want, &want->blocks[at], got, gb))
      at++;
    if (at == want->nblocks) {
      put_whole(e, golden_line_at(e, w), got, gb, '+',
                "is not in the golden file:");
      differ++;
      continue;
    }
    for (; w < at; w++, differ++)
      put_whole(e, golden_line_at(e, w), want, &want->blocks[w], '-',
                "was not made by this run:");
    rc = diff_pair(e, &want->blocks[w++], gb);
    if (rc < 0) return -1;
    differ += rc;
  }
  for (; w < want->nblocks; w++, differ++)
    put_whole(e, golden_line_at(e, w), want, &want->blocks[w], '-',
              "was not made by this run:");
  return differ;
}

/* Writes the run's output over the golden file: to a file beside it, then
 * renamed over it, so that the golden file is never half written. */
static int write_golden(const try_expect *e)
{
  size_t n = strlen(e->golden) + 32;
  char *tmp = malloc(n);
  const char *p = e->got.text.data;
  size_t left = e->got.text.len;
  int fd = -1, err = 0;

  if (!tmp) {
    fprintf(stderr, "lumberjit: --update: out of memory\n");
    return 1;
  }
  snprintf(tmp, n, "%s.tmp%ld", e->golden, (long)getpid());
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0666);
  if (fd < 0) err = errno;
  while (!err && left) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) err = errno;
    else p += w, left -= (size_t)w;
  }
  if (!err && fsync(fd) != 0) err = errno;
  if (fd >= 0 && close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, e->golden) != 0) err = errno;
  if (err) {
    if (fd >= 0) unlink(tmp);
    fprintf(stderr, "lumberjit: --update: cannot write %s: %s\n", e->golden,
            strerror(err));
  } else {
    fprintf(stderr, "lumberjit: --update: wrote %s, the output of %zu sample "
            "line%s\n", e->golden, e->added, e->added == 1 ? "" : "s");
  }
  free(tmp);
  return err ? 1 : 0;
}

try_expect *try_expect_open(const char *golden, bool update)
{
  try_expect *e = calloc(1, sizeof *e);
  int err;

  if (!e) {
    fprintf(stderr, "lumberjit: --expect: out of memory\n");
    return NULL;
  }
  e->golden = golden;
  e->update = update;
  if (update) return e;
  err = read_file(golden, &e->want.text);
  if (err == ENOENT)
    fprintf(stderr, "lumberjit: --expect: there is no golden file %s; "
            "--update writes it with this run's output\n", golden);
  else if (err)
    fprintf(stderr, "lumberjit: --expect: cannot read %s: %s\n", golden,
            strerror(err));
  if (err) {
    try_expect_free(e);
    return NULL;
  }
  return e;
}

void try_expect_add(try_expect *e, const buf *out)
{
  if (!buf_append(&e->got.text, out->data, out->len)) e->out_of_memory = true;
  e->added++;
}

int try_expect_finish(try_expect *e)
{
  long differ;

  if (e->out_of_memory) {
    fprintf(stderr, "lumberjit: --expect: out of memory\n");
    return 1;
  }
  if (e->update) return write_golden(e);
  differ = split(&e->want) && split(&e->got) ? compare(e) : -1;
  fflush(stdout);
  if (differ < 0)
    fprintf(stderr, "lumberjit: --expect: out of memory\n");
  else if (differ)
    fprintf(stderr, "lumberjit: --expect %s: %ld sample line%s differ%s\n",
            e->golden, differ, differ == 1 ? "" : "s", differ == 1 ? "s" : "");
  else
    fprintf(stderr, "lumberjit: --expect %s: the same, %zu sample line%s\n",
            e->golden, e->added, e->added == 1 ? "" : "s");
  return differ == 0 ? 0 : 1;
}

static void side_free(side *sd)
{
  buf_free(&sd->text);
  free(sd->lines);
  free(sd->blocks);
}

void try_expect_free(try_expect *e)
{
  if (!e) return;
  side_free(&e->want);
  side_free(&e->got);
  free(e);
}
