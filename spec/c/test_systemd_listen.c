/*
 * test_systemd_listen.c - the sockets systemd passes (systemd_listen.h),
 * as systemd passes them: at descriptors 3 on, with LISTEN_PID, LISTEN_FDS
 * and LISTEN_FDNAMES. The addresses are Unix paths and unbound sockets, so
 * the wildcard rule (0.0.0.0 takes a [::] socket that takes IPv4 too) is
 * tried without binding a port: an unbound AF_INET6 socket is at [::]:0.
 * socket_activation_spec.lua runs it with systemd-socket-activate.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "systemd_listen.h"

enum { UNIX_STREAM, UNIX_DGRAM, UNLISTENED, ANY6, ANY6_ONLY, NSOCKETS };

static char dir[] = "/tmp/test_systemd_listen-XXXXXX";

static struct sockaddr_un unix_at(const char *name)
{
  struct sockaddr_un sun = {.sun_family = AF_UNIX};

  snprintf(sun.sun_path, sizeof sun.sun_path, "%s/%s", dir, name);
  return sun;
}

static int unix_socket(int type, const char *name, bool listening)
{
  struct sockaddr_un sun = unix_at(name);
  int fd = socket(AF_UNIX, type, 0);

  CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sun, sizeof sun) == 0);
  if (listening) CHECK(listen(fd, 8) == 0);
  return fd;
}

static int any6(int v6only)
{
  int fd = socket(AF_INET6, SOCK_DGRAM, 0);

  CHECK(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) ==
        0);
  return fd;
}

/* The sockets at 3 on, as systemd leaves them (not close-on-exec). */
static void pass(void)
{
  int fds[NSOCKETS] = {
    [UNIX_STREAM] = unix_socket(SOCK_STREAM, "stream", true),
    [UNIX_DGRAM] = unix_socket(SOCK_DGRAM, "dgram", false),
    [UNLISTENED] = unix_socket(SOCK_STREAM, "unlistened", false),
    [ANY6] = any6(0), [ANY6_ONLY] = any6(1)};

  for (int i = 0; i < NSOCKETS; i++) {
    CHECK(dup2(fds[i], 100 + i) == 100 + i);
    close(fds[i]);
  }
  for (int i = 0; i < NSOCKETS; i++) {
    CHECK(dup2(100 + i, 3 + i) == 3 + i);
    close(100 + i);
  }
}

static bool closed(int fd)
{
  return fcntl(fd, F_GETFD) < 0;
}

static int claim(int type, const void *want, const char **name)
{
  void *carried = &carried;
  int fd = -1, rc = systemd_listen_claim(type, want, &fd, name, &carried);

  CHECK(rc == 0 || (fd >= 3 + NSOCKETS && (fcntl(fd, F_GETFD) & FD_CLOEXEC) &&
                    (fcntl(fd, F_GETFL) & O_NONBLOCK)));
  CHECK(carried == NULL);
  if (rc == 1) close(fd);
  return rc;
}

static int drops;

static void drop(void *carried)
{
  CHECK(strcmp(carried, "dropped") == 0);
  drops++;
}

/* A reload's socket: given once, with what was kept with it; one no
 * listener claims is closed, and what goes with it dropped. */
static void check_kept(const struct sockaddr_un *at)
{
  int fd = socket(AF_UNIX, SOCK_STREAM, 0), got = -1;
  const char *name;
  void *carried = NULL;
  char taken[] = "taken", dropped[] = "dropped";

  unlink(at->sun_path);
  CHECK(bind(fd, (const void *)at, sizeof *at) == 0 && listen(fd, 1) == 0);
  CHECK(systemd_listen_would_claim(fd, SOCK_STREAM, (const void *)at));
  CHECK(!systemd_listen_would_claim(fd, SOCK_DGRAM, (const void *)at));
  CHECK(systemd_listen_keep(fd, taken, drop) == 0);
  CHECK(systemd_listen_claim(SOCK_STREAM, (const void *)at, &got, &name,
                             &carried) == 2 &&
        carried == taken && got != fd);
  CHECK(systemd_listen_claim(SOCK_STREAM, (const void *)at, &got, &name,
                             &carried) == 0 && carried == NULL);
  close(got);
  CHECK(systemd_listen_keep(fd, dropped, drop) == 0);
  systemd_listen_drop_kept();
  CHECK(drops == 1);
  CHECK(systemd_listen_claim(SOCK_STREAM, (const void *)at, &got, &name,
                             &carried) == 0);
  close(fd);
  unlink(at->sun_path);
}

int main(void)
{
  struct sockaddr_un stream, dgram, unlistened;
  struct sockaddr_in any4 = {.sin_family = AF_INET};
  struct sockaddr_in6 in6any = {.sin6_family = AF_INET6};
  const char *name = NULL;
  char pid[32];

  CHECK(mkdtemp(dir) != NULL);
  stream = unix_at("stream");
  dgram = unix_at("dgram");
  unlistened = unix_at("unlistened");
  pass();

  /* Variables a parent left for itself are not ours, and go. */
  setenv("LISTEN_PID", "1", 1);
  setenv("LISTEN_FDS", "5", 1);
  systemd_listen_take();
  CHECK(!getenv("LISTEN_PID") && !getenv("LISTEN_FDS"));
  CHECK(claim(SOCK_STREAM, &stream, &name) == 0);

  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  setenv("LISTEN_PID", pid, 1);
  setenv("LISTEN_FDS", "5", 1);
  setenv("LISTEN_FDNAMES", "stream::unlistened", 1);
  systemd_listen_take();
  CHECK(!getenv("LISTEN_PID") && !getenv("LISTEN_FDS") &&
        !getenv("LISTEN_FDNAMES"));
  for (int i = 0; i < NSOCKETS; i++)
    CHECK(fcntl(3 + i, F_GETFD) & FD_CLOEXEC);

  /* By type and address; taken again (a listener built again). */
  CHECK(claim(SOCK_DGRAM, &stream, &name) == 0);
  CHECK(claim(SOCK_STREAM, &stream, &name) == 1 &&
        strcmp(name, "stream") == 0);
  CHECK(claim(SOCK_STREAM, &stream, &name) == 1);
  CHECK(claim(SOCK_DGRAM, &dgram, &name) == 1 &&
        strcmp(name, "unknown") == 0);
  /* A stream socket that is not listening is no listener's. */
  CHECK(claim(SOCK_STREAM, &unlistened, &name) == 0);

  /* 0.0.0.0 takes [::] when it takes IPv4 too; [::] takes [::]. */
  CHECK(claim(SOCK_STREAM, &any4, &name) == 0);
  CHECK(claim(SOCK_DGRAM, &any4, &name) == 1 && strcmp(name, "unknown") == 0);
  CHECK(claim(SOCK_DGRAM, &in6any, &name) == 1);
  any4.sin_port = htons(514);
  CHECK(claim(SOCK_DGRAM, &any4, &name) == 0);

  systemd_listen_close_unclaimed();
  CHECK(!closed(3 + UNIX_STREAM) && !closed(3 + UNIX_DGRAM) &&
        !closed(3 + ANY6));
  CHECK(closed(3 + UNLISTENED) && closed(3 + ANY6_ONLY));

  check_kept(&unlistened);
  /* systemd's sockets stay through a reload's drop. */
  systemd_listen_drop_kept();
  CHECK(!closed(3 + UNIX_STREAM) && !closed(3 + ANY6));

  unlink(stream.sun_path);
  unlink(dgram.sun_path);
  unlink(unlistened.sun_path);
  rmdir(dir);
  return check_summary();
}
