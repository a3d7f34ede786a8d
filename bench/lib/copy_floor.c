/*
 * copy_floor.c - the least a line passthrough with lumberjit's promises
 * can do, for bench/p2-passthrough to measure lumberjit against: read the
 * file in 1 MiB reads (lumberjit's read size), find every line's end with
 * memchr (records are counted, and checked against max_line and for a CR
 * before the LF), write each read's whole lines, carry its partial last
 * line to the next, and fsync the output at the end (as lumberjit does, so
 * that checkpoints never outlive the lines they count). No threads, no
 * checkpoints, no accounting.
 *
 *   cc -O2 -o copy_floor copy_floor.c && ./copy_floor IN OUT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_SIZE (1u << 20)

static void write_all(int fd, const char *p, size_t n)
{
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) {
      perror("write");
      exit(1);
    }
    p += w;
    n -= (size_t)w;
  }
}

int main(int argc, char **argv)
{
  char *buf = malloc(2 * READ_SIZE);
  size_t carried = 0, lines = 0;
  ssize_t n;
  int in, out;

  if (argc != 3 || !buf) {
    fprintf(stderr, "usage: copy_floor IN OUT\n");
    return 2;
  }
  in = open(argv[1], O_RDONLY);
  out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0) {
    perror("open");
    return 1;
  }
  while ((n = read(in, buf + carried, READ_SIZE)) > 0) {
    const char *p = buf, *end = buf + carried + n, *nl;
    while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
      lines++;
      p = nl + 1;
    }
    write_all(out, buf, (size_t)(p - buf));
    carried = (size_t)(end - p);
    memmove(buf, p, carried);
  }
  write_all(out, buf, carried);
  if (n < 0 || fsync(out) != 0) {
    perror(n < 0 ? "read" : "fsync");
    return 1;
  }
  fprintf(stderr, "%zu lines\n", lines + (carried > 0));
  return 0;
}
