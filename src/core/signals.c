/* signals.c - see signals.h. */
#include "signals.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

static uv_signal_t sighup, sigint, sigterm;
static signals_handler handler;
static bool started;

static void on_signal(uv_signal_t *s, int signum)
{
  (void)s;
  if (signum == SIGHUP) {
    if (handler.reopen) handler.reopen(handler.ud);
  } else if (handler.stop) {
    handler.stop(handler.ud, signum == SIGINT ? "SIGINT" : "SIGTERM");
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
      watch(loop, &sigterm, SIGTERM) != 0)
    return -1;
  return 0;
}

void signals_set_handler(const signals_handler *h)
{
  handler = h ? *h : (signals_handler){0};
}

void signals_close(void)
{
  if (!started) return;
  started = false;
  uv_close((uv_handle_t *)&sighup, NULL);
  uv_close((uv_handle_t *)&sigint, NULL);
  uv_close((uv_handle_t *)&sigterm, NULL);
  /* Closing the last handle of a signal gives it its default action back,
   * which for a stop signal that comes now (a supervisor's second; what
   * coreutils' timeout sends its process group after the child) kills a
   * process whose run is over, summary written, with status 143 instead of
   * its own. The run has stopped: another stop changes nothing. */
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
}
