/* signals.c - see signals.h. */
#include "signals.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

static uv_signal_t sighup, sigint, sigterm, sigusr1;
static signals_handler handler;
static bool started;
/* A stop or a reload that came while no one was set to hear it (between
 * two pipelines of a reload): the next handler hears it. */
static const char *pending_stop;
static bool pending_reload;

static void on_signal(uv_signal_t *s, int signum)
{
  (void)s;
  switch (signum) {
  case SIGHUP:
    if (handler.reload) handler.reload(handler.ud, "SIGHUP");
    else pending_reload = true;
    break;
  case SIGUSR1:
    if (handler.reopen) handler.reopen(handler.ud, "SIGUSR1");
    break;
  default:
    if (handler.stop)
      handler.stop(handler.ud, signum == SIGINT ? "SIGINT" : "SIGTERM");
    else
      pending_stop = signum == SIGINT ? "SIGINT" : "SIGTERM";
  }
}

static int watch(uv_loop_t *loop, uv_signal_t *s, int signum)
{
  int rc = uv_signal_init(loop, s);
  if (rc == 0) rc = uv_signal_start(s, on_signal, signum);
  if (rc == 0) uv_unref((uv_handle_t *)s);
  return rc;
}

int signals_start(uv_loop_t *loop)
{
  signal(SIGPIPE, SIG_IGN);
  started = true;
  if (watch(loop, &sighup, SIGHUP) != 0 || watch(loop, &sigint, SIGINT) != 0 ||
      watch(loop, &sigterm, SIGTERM) != 0 || watch(loop, &sigusr1, SIGUSR1) != 0)
    return -1;
  return 0;
}

void signals_set_handler(const signals_handler *h)
{
  handler = h ? *h : (signals_handler){0};
  if (pending_stop && handler.stop) {
    const char *signame = pending_stop;
    pending_stop = NULL;
    pending_reload = false; /* a stop wins */
    handler.stop(handler.ud, signame);
  }
  if (pending_reload && handler.reload) {
    pending_reload = false;
    handler.reload(handler.ud, "SIGHUP");
  }
}

void signals_close(void)
{
  if (!started) return;
  started = false;
  uv_close((uv_handle_t *)&sighup, NULL);
  uv_close((uv_handle_t *)&sigint, NULL);
  uv_close((uv_handle_t *)&sigterm, NULL);
  uv_close((uv_handle_t *)&sigusr1, NULL);
  /* Closing the last handle of a signal gives it its default action back,
   * which for a stop signal that comes now (a supervisor's second; what
   * coreutils' timeout sends its process group after the child) kills a
   * process whose run is over, summary written, with status 143 instead of
   * its own. The run has stopped: another stop changes nothing. */
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
}
