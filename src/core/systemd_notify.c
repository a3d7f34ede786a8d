/* systemd_notify.c - see systemd_notify.h. */
#include "systemd_notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int sock = -1;
static uv_timer_t watchdog;
static bool watchdog_open;

/* The address NOTIFY_SOCKET names; false when it names none. */
static bool notify_address(struct sockaddr_un *sa, socklen_t *len)
{
  const char *path = getenv("NOTIFY_SOCKET");
  size_t n = path ? strlen(path) : 0;

  if (n < 2 || n >= sizeof sa->sun_path || (path[0] != '/' && path[0] != '@'))
    return false;
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  memcpy(sa->sun_path, path, n);
  /* An abstract address is its bytes after a NUL, without a NUL at the end. */
  if (path[0] == '@') sa->sun_path[0] = '\0';
  *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
                     (path[0] == '/'));
  return true;
}

int systemd_notify(const char *state)
{
  struct sockaddr_un sa;
  socklen_t salen;

  if (!notify_address(&sa, &salen)) return 0;
  if (sock < 0 && (sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
    return -1;
  return sendto(sock, state, strlen(state), MSG_DONTWAIT | MSG_NOSIGNAL,
                (struct sockaddr *)&sa, salen) < 0 ? -1 : 0;
}

int systemd_notifyf(const char *fmt, ...)
{
  char state[1024];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(state, sizeof state, fmt, ap);
  va_end(ap);
  return systemd_notify(state);
}

static void on_watchdog(uv_timer_t *t)
{
  (void)t;
  systemd_notify("WATCHDOG=1");
}

int systemd_watchdog_start(uv_loop_t *loop)
{
  const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
  unsigned long long us;
  char *end;
  int rc;

  if (!usec || !getenv("NOTIFY_SOCKET") || watchdog_open) return 0;
  /* WATCHDOG_PID names the process the pings are asked of: not a child
   * that inherited the variables. */
  if (pid && strtoull(pid, NULL, 10) != (unsigned long long)getpid()) return 0;
  us = strtoull(usec, &end, 10);
  if (*end || us == 0) return 0;
  if ((rc = uv_timer_init(loop, &watchdog)) != 0) return rc;
  watchdog_open = true;
  /* Half the interval, as sd_watchdog_enabled(3) advises; at least 1 ms. */
  us /= 2000;
  if ((rc = uv_timer_start(&watchdog, on_watchdog, 0, us ? us : 1)) != 0)
    return rc;
  uv_unref((uv_handle_t *)&watchdog);
  return 0;
}

void systemd_notify_close(void)
{
  if (watchdog_open) uv_close((uv_handle_t *)&watchdog, NULL);
  watchdog_open = false;
  if (sock >= 0) close(sock);
  sock = -1;
}
