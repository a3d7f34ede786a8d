/* systemd_listen.c - see systemd_listen.h. */
#include "systemd_listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

/* sd_listen_fds(3): the first descriptor passed. */
#define LISTEN_FDS_START 3
/* systemd refuses FileDescriptorName=s longer than this. */
#define FDNAME_MAX 255

typedef struct {
  int fd;                   /* -1 once closed */
  bool claimed;
  bool kept;                /* a reload's (systemd_listen_keep) */
  void *carried;            /* kept: what goes with it */
  void (*drop)(void *carried);
  char name[FDNAME_MAX + 1];
} passed_socket;

/* Kept for the whole run: a listener built again claims its socket again.
 * A reload's are added after systemd's, and go at their claim. */
static passed_socket *sockets;
static size_t nsockets;

/* The names in LISTEN_FDNAMES, in order; "unknown" past its end, as
 * sd_listen_fds_with_names(3) says. */
static void read_names(const char *names)
{
  for (size_t i = 0; i < nsockets; i++) {
    size_t n = names ? strcspn(names, ":") : 0;
    if (n == 0)
      snprintf(sockets[i].name, sizeof sockets[i].name, "unknown");
    else
      snprintf(sockets[i].name, sizeof sockets[i].name, "%.*s",
               (int)(n > FDNAME_MAX ? FDNAME_MAX : n), names);
    names = names && names[n] ? names + n + 1 : NULL;
  }
}

void systemd_listen_take(void)
{
  const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
  char *end;
  unsigned long n;

  /* LISTEN_PID guards against variables a parent left for itself. */
  if (pid && fds && strtoull(pid, NULL, 10) == (unsigned long long)getpid() &&
      (n = strtoul(fds, &end, 10)) > 0 && !*end &&
      n <= INT_MAX - LISTEN_FDS_START &&
      (sockets = calloc(n, sizeof *sockets))) {
    nsockets = n;
    for (size_t i = 0; i < nsockets; i++) {
      sockets[i].fd = LISTEN_FDS_START + (int)i;
      fcntl(sockets[i].fd, F_SETFD, FD_CLOEXEC);
    }
    read_names(getenv("LISTEN_FDNAMES"));
  }
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
}

/* Whether a socket bound at `have` takes what one bound at `want` would:
 * the same address, or, for want's 0.0.0.0, the IPv6 wildcard of a socket
 * that takes IPv4 too (not IPV6_V6ONLY). */
static bool same_address(int fd, const struct sockaddr_storage *have,
                         const struct sockaddr *want)
{
  const struct sockaddr_in *h4 = (const void *)have, *w4 = (const void *)want;
  const struct sockaddr_in6 *h6 = (const void *)have,
                            *w6 = (const void *)want;
  int v6only = 1;
  socklen_t len = sizeof v6only;

  if (want->sa_family == AF_UNIX)
    return have->ss_family == AF_UNIX &&
           strncmp(((const struct sockaddr_un *)have)->sun_path,
                   ((const struct sockaddr_un *)want)->sun_path,
                   sizeof ((struct sockaddr_un *)0)->sun_path) == 0;
  if (want->sa_family == AF_INET && have->ss_family == AF_INET)
    return h4->sin_port == w4->sin_port &&
           h4->sin_addr.s_addr == w4->sin_addr.s_addr;
  if (want->sa_family == AF_INET6 && have->ss_family == AF_INET6)
    return h6->sin6_port == w6->sin6_port &&
           IN6_ARE_ADDR_EQUAL(&h6->sin6_addr, &w6->sin6_addr);
  return want->sa_family == AF_INET && have->ss_family == AF_INET6 &&
         w4->sin_addr.s_addr == htonl(INADDR_ANY) &&
         h6->sin6_port == w4->sin_port &&
         IN6_IS_ADDR_UNSPECIFIED(&h6->sin6_addr) &&
         getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len) == 0 &&
         !v6only;
}

static bool matches(int fd, int type, const struct sockaddr *want)
{
  struct sockaddr_storage have;
  socklen_t len = sizeof type;
  int got = 0, listening = 0;

  memset(&have, 0, sizeof have);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &got, &len) != 0 || got != type)
    return false;
  len = sizeof listening;
  if (type == SOCK_STREAM &&
      (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
       !listening))
    return false;
  len = sizeof have;
  return getsockname(fd, (struct sockaddr *)&have, &len) == 0 &&
         same_address(fd, &have, want);
}

bool systemd_listen_would_claim(int fd, int type,
                                const struct sockaddr *want)
{
  return matches(fd, type, want);
}

int systemd_listen_claim(int type, const struct sockaddr *want, int *fd,
                         const char **name, void **carried)
{
  *carried = NULL;
  for (size_t i = 0; i < nsockets; i++) {
    passed_socket *s = &sockets[i];
    if (s->fd < 0 || !matches(s->fd, type, want)) continue;
    if (s->kept) {
      /* A reload's is given, not lent. */
      *fd = s->fd;
      *carried = s->carried;
      s->fd = -1;
      s->carried = NULL;
    } else if ((*fd = fcntl(s->fd, F_DUPFD_CLOEXEC, LISTEN_FDS_START)) < 0) {
      return -1;
    }
    /* The loop reads it when it is ready, and an accept or a read must not
     * block it should another process get there first. */
    fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) | O_NONBLOCK);
    s->claimed = true;
    *name = s->name;
    return s->kept ? 2 : 1;
  }
  return 0;
}

/* "stream 127.0.0.1:514", "datagram [::]:514", "stream /run/x.sock". */
static void describe(int fd, char *out, size_t len)
{
  struct sockaddr_storage sa;
  socklen_t salen = sizeof sa, typelen = sizeof(int);
  const struct sockaddr_in6 *s6 = (const void *)&sa;
  const struct sockaddr_in *s4 = (const void *)&sa;
  char host[INET6_ADDRSTRLEN] = "";
  int type = 0;
  const char *kind;

  memset(&sa, 0, sizeof sa);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typelen) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) {
    snprintf(out, len, "no socket: %s", strerror(errno));
    return;
  }
  kind = type == SOCK_STREAM ? "stream" : type == SOCK_DGRAM ? "datagram"
                                                             : "socket";
  if (sa.ss_family == AF_INET)
    snprintf(out, len, "%s %s:%u", kind,
             inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host),
             ntohs(s4->sin_port));
  else if (sa.ss_family == AF_INET6)
    snprintf(out, len, "%s [%s]:%u", kind,
             inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host),
             ntohs(s6->sin6_port));
  else if (sa.ss_family == AF_UNIX)
    snprintf(out, len, "%s unix:%s", kind,
             ((const struct sockaddr_un *)&sa)->sun_path);
  else
    snprintf(out, len, "%s of family %d", kind, sa.ss_family);
}

void systemd_listen_close_unclaimed(void)
{
  char what[160];

  for (size_t i = 0; i < nsockets; i++) {
    passed_socket *s = &sockets[i];
    if (s->fd < 0 || s->claimed || s->kept) continue;
    describe(s->fd, what, sizeof what);
    log_warning("systemd passed socket '%s' (fd %d, %s), which no input "
                "listens on: it is closed", s->name, s->fd, what);
    close(s->fd);
    s->fd = -1;
  }
}

int systemd_listen_keep(int fd, void *carried, void (*drop)(void *carried))
{
  passed_socket *more;
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, LISTEN_FDS_START);

  if (copy < 0) return -1;
  more = realloc(sockets, (nsockets + 1) * sizeof *more);
  if (!more) {
    close(copy);
    errno = ENOMEM;
    return -1;
  }
  sockets = more;
  sockets[nsockets++] = (passed_socket){.fd = copy, .kept = true,
                                        .carried = carried, .drop = drop,
                                        .name = "reload"};
  return 0;
}

void systemd_listen_drop_kept(void)
{
  size_t n = 0;
  char what[160];

  /* systemd's stay, in their places (the table only grows past them). */
  for (size_t i = 0; i < nsockets; i++) {
    passed_socket *s = &sockets[i];
    if (!s->kept) {
      sockets[n++] = *s;
      continue;
    }
    if (s->fd < 0) continue;
    describe(s->fd, what, sizeof what);
    log_msg("reload: %s has no listener any more: closed", what);
    close(s->fd);
    if (s->carried) s->drop(s->carried);
  }
  nsockets = n;
}
