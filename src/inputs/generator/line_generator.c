/*
 * line_generator.c - varied log lines (line_generator.h).
 */
#include "line_generator.h"

#include <stdio.h>
#include <string.h>

/* The vocabulary of syslog messages: bench/lib/gen_lines.py's. */
static const char *const words[] = {
  "able", "about", "account", "action", "address", "after", "again", "agent",
  "alert", "allow", "also", "amount", "answer", "apply", "area", "around",
  "array", "attempt", "audit", "back", "backend", "balance", "batch",
  "before", "begin", "below", "block", "body", "boot", "branch", "break",
  "buffer", "build", "bundle", "cache", "call", "cancel", "cannot",
  "capacity", "cause", "change", "channel", "check", "child", "chunk",
  "client", "close", "cluster", "code", "column", "commit", "complete",
  "config", "connect", "consumer", "content", "context", "control", "copy",
  "count", "create", "current", "cursor", "daemon", "data", "database",
  "deadline", "debug", "default", "delay", "delete", "deliver", "device",
  "disk", "done", "drain", "driver", "drop", "during", "engine", "entry",
  "error", "event", "every", "expire", "export", "failed", "fetch", "field",
  "file", "filter", "finish", "first", "flush", "format", "frame", "free",
  "from", "gateway", "group", "handle", "header", "health", "host", "image",
  "index", "input", "insert", "instance", "interval", "invalid", "issue",
  "item", "job", "key", "latency", "leader", "level", "limit", "line", "link",
  "list", "load", "local", "lock", "login", "lookup", "manager", "match",
  "memory", "merge", "message", "method", "metric", "migrate", "missing",
  "mode", "module", "mount", "network", "node", "notify", "number", "object",
  "offset", "open", "order", "output", "owner", "packet", "page", "parse",
  "partition", "path", "peer", "pending", "policy", "pool", "port", "primary",
  "process", "producer", "profile", "proxy", "queue", "quota", "range",
  "rate", "read", "ready", "record", "refresh", "region", "reject", "release",
  "remote", "replica", "request", "reset", "resolve", "response", "restart",
  "result", "retry", "return", "route", "rule", "running", "schema", "scope",
  "secret", "segment", "select", "send", "server", "service", "session",
  "shard", "signal", "size", "slow", "socket", "source", "start", "state",
  "status", "step", "stop", "storage", "stream", "success", "sync", "table",
  "task", "thread", "timeout", "token", "topic", "trace", "update", "upload",
  "user", "value", "version", "volume", "wait", "warning", "worker", "write",
  "zone"
};

static const char *const hosts[] = {"snack", "web01", "db-7", "edge.example.org"};
static const char *const programs[] = {"jls", "sshd", "nginx", "kernel", "cron",
                                       "app-worker"};
static const char *const outcomes[] = {"ok", "denied", "retry", "error"};
static const char *const methods[] = {"POST", "PUT", "DELETE"};
static const int rare_statuses[] = {304, 404, 500, 502};
static const char *const agents[] = {
  "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/120.0",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/119.0",
  "curl/7.88.1", "Go-http-client/1.1", "python-requests/2.31.0",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1",
  "kube-probe/1.28", "Prometheus/2.47.0"};
static const char *const resources[] = {
  "users", "orders", "items", "carts", "sessions", "payments", "reviews",
  "stock", "search", "images", "invoices", "events"};
static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* One element of a static array, at random. */
#define PICK(g, array) (array)[below((g), sizeof (array) / sizeof *(array))]

/* splitmix64: small, fast and good enough to vary log lines. */
static uint64_t next_random(line_generator *g)
{
  uint64_t z = (g->state += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

/* A number in [0, n); the modulo's bias is far below what matters here. */
static unsigned below(line_generator *g, size_t n)
{
  return (unsigned)(next_random(g) % n);
}

void line_generator_init(line_generator *g, line_format format,
                         const char *template, uint64_t seed)
{
  memset(g, 0, sizeof *g);
  g->format = format;
  g->template = template;
  g->state = seed;
  g->stamped = (time_t)-1;
}

const char *const line_format_names[] = {"w1", "syslog", "nginx", "template",
                                         NULL};

/* The time texts change once a second, not once a line. */
static void stamp(line_generator *g, time_t now)
{
  struct tm tm;

  if (now == g->stamped) return;
  g->stamped = now;
  gmtime_r(&now, &tm);
  strftime(g->iso, sizeof g->iso, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
  snprintf(g->rfc3164, sizeof g->rfc3164, "%s %2d %02d:%02d:%02d",
           months[tm.tm_mon], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  strftime(g->clf, sizeof g->clf, "%d/%b/%Y:%H:%M:%S +0000", &tm);
}

static size_t w1_line(line_generator *g, char *out)
{
  unsigned c[6];

  for (int i = 0; i < 6; i++) c[i] = below(g, 10000);
  return (size_t)snprintf(out, LINE_GENERATOR_MAX,
    "%s INFO Non-zero metrics in the last 30s: "
    "libbeat.publisher.published_events=%u registrar.states.update=%u "
    "libbeat.kafka.call_count.PublishEvents=%u publish.events=%u "
    "libbeat.kafka.published_and_acked_events=%u registrar.writes=%u",
    g->iso, c[0], c[1], c[2], c[3], c[4], c[5]);
}

static size_t syslog_line(line_generator *g, char *out)
{
  unsigned nwords = 3 + below(g, 10);
  int n = snprintf(out, LINE_GENERATOR_MAX, "<%u>%s %s %s[%u]:",
                   13 + below(g, 150), g->rfc3164, PICK(g, hosts),
                   PICK(g, programs), 1000 + below(g, 50));

  /* 12 words of 9 letters and a pair at most: well inside the line. */
  for (unsigned i = 0; i < nwords; i++)
    n += snprintf(out + n, (size_t)(LINE_GENERATOR_MAX - n), " %s",
                  PICK(g, words));
  if (below(g, 2))
    n += snprintf(out + n, (size_t)(LINE_GENERATOR_MAX - n),
                  " user=u%u status=%s", below(g, 500), PICK(g, outcomes));
  return (size_t)n;
}

static size_t nginx_line(line_generator *g, char *out)
{
  const char *method = below(g, 5) ? "GET" : PICK(g, methods);
  int status = below(g, 20) < 17 ? 200 : PICK(g, rare_statuses);
  char referrer[48] = "-";

  if (below(g, 10) >= 3)
    snprintf(referrer, sizeof referrer, "https://example.com/page/%u",
             below(g, 50));
  return (size_t)snprintf(out, LINE_GENERATOR_MAX,
    "10.%u.%u.%u - - [%s] \"%s /api/v1/%s/%u?page=%u HTTP/1.1\" %d %u "
    "\"%s\" \"%s\"", below(g, 256), below(g, 256), below(g, 256), g->clf,
    method, PICK(g, resources), below(g, 1000000), below(g, 100), status,
    below(g, 100000), referrer, PICK(g, agents));
}

/* The placeholders of a template, in the order template_value takes. */
static const char *const placeholders[] = {
  "seq", "iso", "rfc3164", "clf", "word", "host", "program", "pid", "int",
  "ip", NULL};

/* The placeholder at t (past "%{"), by its index in placeholders; -1: no
 * known one. *len: its name's length. */
static int placeholder_at(const char *t, size_t *len)
{
  const char *end = strchr(t, '}');

  if (!end) return -1;
  *len = (size_t)(end - t);
  for (int i = 0; placeholders[i]; i++)
    if (strlen(placeholders[i]) == *len && memcmp(placeholders[i], t, *len) == 0)
      return i;
  return -1;
}

int line_template_check(const char *template, char *err, size_t errlen)
{
  for (const char *p = strstr(template, "%{"); p; p = strstr(p + 2, "%{")) {
    size_t len = 0; /* set when a '}' follows, which is when it is read */
    if (placeholder_at(p + 2, &len) < 0) {
      snprintf(err, errlen, "the template's '%.*s' is no placeholder (%%{seq}, "
               "%%{iso}, %%{rfc3164}, %%{clf}, %%{word}, %%{host}, "
               "%%{program}, %%{pid}, %%{int}, %%{ip})",
               (int)(strchr(p, '}') ? len + 3 : strlen(p)), p);
      return -1;
    }
  }
  return 0;
}

/* Writes placeholder i's value at out (room for `room` bytes); returns
 * what it wrote, as snprintf does. */
static int template_value(line_generator *g, int i, char *out, size_t room)
{
  switch (i) {
  case 0: return snprintf(out, room, "%llu", (unsigned long long)g->seq);
  case 1: return snprintf(out, room, "%s", g->iso);
  case 2: return snprintf(out, room, "%s", g->rfc3164);
  case 3: return snprintf(out, room, "%s", g->clf);
  case 4: return snprintf(out, room, "%s", PICK(g, words));
  case 5: return snprintf(out, room, "%s", PICK(g, hosts));
  case 6: return snprintf(out, room, "%s", PICK(g, programs));
  case 7: return snprintf(out, room, "%u", 1000 + below(g, 50));
  case 8: return snprintf(out, room, "%u", below(g, 10000));
  default:
    return snprintf(out, room, "10.%u.%u.%u", below(g, 256), below(g, 256),
                    below(g, 256));
  }
}

static size_t template_line(line_generator *g, char *out)
{
  size_t n = 0, len;

  for (const char *t = g->template; *t && n < LINE_GENERATOR_MAX;) {
    int i = t[0] == '%' && t[1] == '{' ? placeholder_at(t + 2, &len) : -1;
    if (i < 0) {
      out[n++] = *t++;
      continue;
    }
    int w = template_value(g, i, out + n, LINE_GENERATOR_MAX - n);
    /* A value cut at the end leaves snprintf's NUL: the line ends there. */
    n += (size_t)w < LINE_GENERATOR_MAX - n ? (size_t)w
                                              : LINE_GENERATOR_MAX - n - 1;
    t += len + 3;
  }
  return n;
}

size_t line_generator_next(line_generator *g, char *out, time_t now)
{
  stamp(g, now);
  g->seq++;
  switch (g->format) {
  case LINES_W1: return w1_line(g, out);
  case LINES_SYSLOG: return syslog_line(g, out);
  case LINES_NGINX: return nginx_line(g, out);
  case LINES_TEMPLATE: return template_line(g, out);
  }
  return 0;
}
