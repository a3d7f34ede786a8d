/*
 * check.h - what our C unit tests share. A failed check prints its
 * file:line and what failed; each test program ends with check_summary(),
 * which prints "N passed, N failed" and gives the exit status.
 */
#ifndef LUMBERJIT_CHECK_H
#define LUMBERJIT_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

static inline void check_at(bool ok, const char *file, int line,
                            const char *what)
{
  if (ok) {
    check_passed++;
  } else {
    check_failed++;
    fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
  }
}

#define CHECK(cond) check_at((cond), __FILE__, __LINE__, #cond)

#define CHECK_CONTAINS(haystack, needle)                                   \
  do {                                                                     \
    const char *h_ = (haystack);                                           \
    char what_[4096];                                                      \
    snprintf(what_, sizeof what_, "\"%.3000s\" does not contain \"%s\"",   \
             h_ ? h_ : "(null)", (needle));                                \
    check_at(h_ && strstr(h_, (needle)), __FILE__, __LINE__, what_);       \
  } while (0)

static inline int check_summary(void)
{
  printf("%d passed, %d failed\n", check_passed, check_failed);
  return check_failed ? 1 : 0;
}

#endif
