/*
 * check.h - the few macros our C unit tests share. Each test program ends
 * with check_summary(), which prints "N passed, N failed" and gives the
 * exit status.
 */
#ifndef LUMBERJIT_CHECK_H
#define LUMBERJIT_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (cond) {                                                            \
      check_passed++;                                                      \
    } else {                                                               \
      check_failed++;                                                      \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,     \
              #cond);                                                      \
    }                                                                      \
  } while (0)

#define CHECK_CONTAINS(haystack, needle)                                   \
  do {                                                                     \
    const char *h_ = (haystack);                                           \
    if (h_ && strstr(h_, (needle))) {                                      \
      check_passed++;                                                      \
    } else {                                                               \
      check_failed++;                                                      \
      fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, \
              __LINE__, h_ ? h_ : "(null)", (needle));                     \
    }                                                                      \
  } while (0)

static inline int check_summary(void)
{
  printf("%d passed, %d failed\n", check_passed, check_failed);
  return check_failed ? 1 : 0;
}

#endif
