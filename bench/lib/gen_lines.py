#!/usr/bin/env python3
"""Varied log lines for the benchmarks: real logs differ line to line, and a
line repeated lets LuaJIT intern its strings once, reporting about half the
real cost. Deterministic (seeded), so runs compare.

  gen_lines.py KIND N FILE [--repeated]

KIND and what varies per line:
  w1     the W1 Filebeat metrics line (247 bytes as in WORKLOADS.md; 247-265
         with these counters): its time (one second per 50 lines) and its
         six counters (0-9999).
  w3     RFC 3164 syslog as W3 sends it: priority (13-162), time (one second
         per 20 lines), host (one of 4), program (one of 6) and pid (one of
         50), and a message of 3-12 words from a 200-word vocabulary, with a
         key=value pair (user of 500, status of 4) in half the lines.
  nginx  nginx's combined format: client address (10.x.y.z, 65,536 of
         them), time (one second per 100 lines), method (4, GET 80%), path
         (/api/v1/<resource of 12>/<id>?page=<n>), status (200 85%, 304, 404,
         500, 502), size (0-99,999), referrer (one of 50, or "-") and user
         agent (one of 8).
  json   JSON lines as structured loggers write them: time (RFC 3339 with ms,
         one second per 50 lines), level (info 70%, debug, warn, error),
         logger (one of 6), pid (one of 50), msg of 3-10 words, a nested
         req object (method, path of 12 resources, status, duration_ms)
         in 80% of lines, tags (1-3 of 5) in 30%, and escapes (a quoted word,
         a tab, an e-acute) in 10%.
  logfmt the same events in logfmt: time, level, logger, pid, msg quoted,
         req.method, req.path, req.status, req.duration_ms as pairs, a bare
         flag (cached) in 20%, an escaped quote in 10%.
--repeated writes the kind's first line N times instead, for comparison
only: it is not what real logs look like.
"""
import json
import random
import sys

WORDS = ("able about account action address after again agent alert allow also amount answer "
         "apply area around array attempt audit back backend balance batch before begin below "
         "block body boot branch break buffer build bundle cache call cancel cannot capacity "
         "cause change channel check child chunk client close cluster code column commit "
         "complete config connect consumer content context control copy count create current "
         "cursor daemon data database deadline debug default delay delete deliver device disk "
         "done drain driver drop during engine entry error event every expire export failed "
         "fetch field file filter finish first flush format frame free from gateway group handle "
         "header health host image index input insert instance interval invalid issue item job "
         "key latency leader level limit line link list load local lock login lookup manager "
         "match memory merge message method metric migrate missing mode module mount network "
         "node notify number object offset open order output owner packet page parse partition "
         "path peer pending policy pool port primary process producer profile proxy queue quota "
         "range rate read ready record refresh region reject release remote replica request "
         "reset resolve response restart result retry return route rule running schema scope "
         "secret segment select send server service session shard signal size slow socket "
         "source start state status step stop storage stream success sync table task thread "
         "timeout token topic trace update upload user value version volume wait warning worker "
         "write zone").split()
W1 = ("2017-03-16T19:21:14+08:00 INFO Non-zero metrics in the last 30s: "
      "libbeat.publisher.published_events=2 registrar.states.update=3 "
      "libbeat.kafka.call_count.PublishEvents=2 publish.events=3 "
      "libbeat.kafka.published_and_acked_events=2 registrar.writes=2")
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


def w1(i, r):
    s = 1489663274 + i // 50
    c = [r.randrange(10000) for _ in range(6)]
    return ("2017-03-%02dT%02d:%02d:%02d+08:00 INFO Non-zero metrics in the last 30s: "
            "libbeat.publisher.published_events=%d registrar.states.update=%d "
            "libbeat.kafka.call_count.PublishEvents=%d publish.events=%d "
            "libbeat.kafka.published_and_acked_events=%d registrar.writes=%d"
            % (16 + s // 86400 % 10, s // 3600 % 24, s // 60 % 60, s % 60, *c))


def w3(i, r):
    s = i // 20
    host = ("snack", "web01", "db-7", "edge.example.org")[r.randrange(4)]
    prog = ("jls", "sshd", "nginx", "kernel", "cron", "app-worker")[r.randrange(6)]
    msg = " ".join(r.choice(WORDS) for _ in range(r.randint(3, 12)))
    if r.random() < 0.5:
        msg += " user=u%d status=%s" % (r.randrange(500), r.choice(("ok", "denied", "retry", "error")))
    return "<%d>%s %2d %02d:%02d:%02d %s %s[%d]: %s" % (
        r.randint(13, 162), MONTHS[4 + s // 86400 % 2], 19 + s // 86400 % 2, s // 3600 % 24,
        s // 60 % 60, s % 60, host, prog, 1000 + r.randrange(50), msg)


def nginx(i, r):
    s = i // 100
    method = "GET" if r.random() < 0.8 else r.choice(("POST", "PUT", "DELETE"))
    status = 200 if r.random() < 0.85 else r.choice((304, 404, 500, 502))
    ref = "-" if r.random() < 0.3 else "https://example.com/page/%d" % r.randrange(50)
    agent = ("Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/120.0",
             "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/119.0",
             "curl/7.88.1", "Go-http-client/1.1", "python-requests/2.31.0",
             "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1",
             "kube-probe/1.28", "Prometheus/2.47.0")[r.randrange(8)]
    resource = ("users", "orders", "items", "carts", "sessions", "payments", "reviews",
                "stock", "search", "images", "invoices", "events")[r.randrange(12)]
    return '10.%d.%d.%d - - [23/Nov/2026:%02d:%02d:%02d +0000] "%s /api/v1/%s/%d?page=%d HTTP/1.1" %d %d "%s" "%s"' % (
        r.randrange(256), r.randrange(256), r.randrange(256), s // 3600 % 24, s // 60 % 60,
        s % 60, method, resource, r.randrange(1000000), r.randrange(100), status,
        r.randrange(100000), ref, agent)


LEVELS = ("info",) * 7 + ("debug", "warn", "error")
LOGGERS = ("http", "db.pool", "auth", "cache", "scheduler", "billing.worker")
RESOURCES = ("users", "orders", "items", "carts", "sessions", "payments", "reviews",
             "stock", "search", "images", "invoices", "events")


def structured(i, r):
    """The event json and logfmt lines write: (pairs, tags)."""
    s = 1704164645 + i // 50
    msg = " ".join(r.choice(WORDS) for _ in range(r.randint(3, 10)))
    if r.random() < 0.1:
        msg += ' "quoted"\tcaf\u00e9'   # written as the escapes \" \t \u00e9
    event = [("time", "2024-01-%02dT%02d:%02d:%02d.%03dZ" % (
                 2 + s // 86400 % 28, s // 3600 % 24, s // 60 % 60, s % 60, r.randrange(1000))),
             ("level", r.choice(LEVELS)), ("logger", r.choice(LOGGERS)),
             ("pid", 1000 + r.randrange(50)), ("msg", msg)]
    if r.random() < 0.8:
        event.append(("req", [("method", "GET" if r.random() < 0.8 else "POST"),
                              ("path", "/api/v1/%s/%d" % (r.choice(RESOURCES), r.randrange(100000))),
                              ("status", 200 if r.random() < 0.9 else r.choice((404, 500))),
                              ("duration_ms", round(r.random() * 500, 3))]))
    tags = r.sample(("prod", "eu", "canary", "v2", "retry"), r.randint(1, 3)) if r.random() < 0.3 else None
    return event, tags


def json_line(i, r):
    event, tags = structured(i, r)
    if tags:
        event.append(("tags", tags))
    nested = lambda v: dict(v) if isinstance(v, list) and isinstance(v[0], tuple) else v
    return json.dumps({k: nested(v) for k, v in event}, separators=(",", ":"))


def logfmt_line(i, r):
    def pairs(prefix, event):
        for k, v in event:
            if isinstance(v, list):
                yield from pairs(prefix + k + ".", v)
            elif isinstance(v, str) and (" " in v or '"' in v):
                yield '%s%s=%s' % (prefix, k, json.dumps(v))
            else:
                yield "%s%s=%s" % (prefix, k, v)
    event, _ = structured(i, r)
    line = " ".join(pairs("", event))
    return line + " cached" if r.random() < 0.2 else line


def main():
    kinds = {"w1": w1, "w3": w3, "nginx": nginx, "json": json_line, "logfmt": logfmt_line}
    if len(sys.argv) < 4 or sys.argv[1] not in kinds:
        sys.exit(__doc__)
    make = kinds[sys.argv[1]]
    n, path = int(sys.argv[2]), sys.argv[3]
    r = random.Random(20261123)
    with open(path, "w") as f:
        if "--repeated" in sys.argv[4:]:
            line = (W1 if sys.argv[1] == "w1" else make(0, r)) + "\n"
            f.write(line * n)
            return
        for i in range(n):
            f.write(make(i, r) + "\n")


if __name__ == "__main__":
    main()
