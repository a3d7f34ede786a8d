#!/usr/bin/env python3
"""The real-nginx spec's helper (spec/e2e/nginx_real_spec.lua): the log
formats, free ports, a raw HTTP client, and the comparison of lumberjit's
JSON with nginx's own escape=json log.

  nginx_client.py formats
      Prints two lines: the log_format of VARIABLES with escape=default
      (values quoted, numbers bare), then the same variables as a JSON
      object (for escape=json).
  nginx_client.py ports N
      Prints N free loopback TCP ports, one a line.
  nginx_client.py send PORT
      Sends the spec's requests to 127.0.0.1:PORT over raw sockets: odd
      paths, quotes, backslashes, non-ASCII and control bytes, a long
      user agent, a POST body, gzip, a proxied request (upstream lists),
      HTTP/1.0 and 0.9, pipelined requests, bad ones (400), one with a
      huge URI (414) and one left unfinished until nginx times it out
      (408). Prints how many requests nginx should log.
  nginx_client.py compare OUT_JSON JSON_LOG DEFAULT_LOG
      Reads lumberjit's output (one JSON object per line, decoded from
      DEFAULT_LOG) and nginx's escape=json log, line by line, and checks
      every field: the values typed as the decoder documents them
      (lua_modules/nginx.lua), "" absent, $request split, $msec the
      @timestamp, the message the default log's line. Prints "ok N", or
      each difference.

Bytes that are not UTF-8 are read as Python's errors="replace" does, which
is what lumberjit's JSON encoder writes (U+FFFD per maximal ill-formed
subpart). To test a new variable: add it to VARIABLES with its type.
"""

import datetime
import json
import socket
import sys
import time

# The variables logged, and the type the decoder gives each.
VARIABLES = [
    ("remote_addr", "string"), ("remote_port", "integer"), ("remote_user", "string"),
    ("server_addr", "string"), ("server_port", "integer"), ("time_local", "string"),
    ("time_iso8601", "string"), ("msec", "timestamp"), ("request", "request"),
    ("status", "integer"), ("body_bytes_sent", "integer"), ("bytes_sent", "integer"),
    ("request_length", "integer"), ("request_time", "double"), ("connection", "integer"),
    ("connection_requests", "integer"), ("pipe", "string"), ("http_user_agent", "string"),
    ("http_referer", "string"), ("http_x_odd", "string"), ("cookie_session", "string"),
    ("arg_q", "string"), ("args", "string"), ("uri", "string"), ("request_uri", "string"),
    ("request_method", "string"), ("server_protocol", "string"), ("scheme", "string"),
    ("host", "string"), ("content_length", "integer"), ("content_type", "string"),
    ("sent_http_content_type", "string"), ("gzip_ratio", "double"), ("pid", "integer"),
    ("https", "string"), ("upstream_addr", "list_string"),
    ("upstream_status", "list_integer"), ("upstream_response_time", "list_double"),
    ("upstream_connect_time", "list_double"), ("upstream_header_time", "list_double"),
    ("upstream_bytes_received", "list_integer"),
    ("upstream_response_length", "list_integer"),
]
NUMERIC = ("integer", "double", "timestamp")

# Keys of lumberjit's JSON that are not fields; a field with one of these
# names is written as fields.NAME (README.md, encoders/json.lua).
HEADER_KEYS = {"@timestamp", "@version", "message", "host", "type", "logger",
               "severity", "pid"}


def formats():
    default = " ".join(("$%s" if kind in NUMERIC else '"$%s"') % name
                       for name, kind in VARIABLES)
    as_json = "{" + ",".join('"%s":"$%s"' % (name, name) for name, _ in VARIABLES) + "}"
    print(default)
    print(as_json)


def ports(n):
    sockets = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    for s in sockets:
        print(s.getsockname()[1])
    for s in sockets:
        s.close()


def exchange(port, data, wait_close=5.0):
    """Sends data, reads until nginx closes (or wait_close passes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait_close)
    s.sendall(data)
    try:
        while s.recv(65536):
            pass
    except socket.timeout:
        pass
    s.close()


def request(path, headers=(), method=b"GET", body=b"", version=b"HTTP/1.1", close=True):
    lines = [method + b" " + path + b" " + version, b"Host: localhost"]
    lines += list(headers)
    if body:
        lines.append(b"Content-Length: %d" % len(body))
    if close:
        lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def send(port):
    logged = 0

    def one(data, count=1):
        nonlocal logged
        exchange(port, data)
        logged += count

    one(request(b"/", [b"User-Agent: curl/7.88.1"]))
    one(request(b'/a%20b/"quoted"/\\back?q=x"y&z=1',
                [b'Referer: he said "hi" \\o/', b'X-Odd: a"b\\c\td',
                 b"Cookie: session=abc123; other=1"]))
    one(request(b"/caf\xc3\xa9/\xff\xfe?q=\xe2\x98\x83",
                [b"User-Agent: \xe2\x98\x83 snow \x7f del \xc3", b"X-Odd: \xf0\x9f\x98\x80"]))
    one(request(b"/long", [b"User-Agent: " + b"Mozilla/5.0 (long; agent) " * 60]))
    one(request(b"/form", [b"Content-Type: application/x-www-form-urlencoded"],
                method=b"POST", body=b"a=1&b=2"))
    one(request(b"/gzip", [b"Accept-Encoding: gzip"]))
    one(request(b"/up/x?q=1"))
    one(request(b"/old", version=b"HTTP/1.0", close=False))
    one(b"GET /ninety\r\n")
    one(b"GARBAGE\r\n\r\n")
    one(b"GET / HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n")
    one(request(b"/" + b"u" * 3000))
    one(request(b"/h", [b"X-Odd: " + b"h" * 3000]))
    # Pipelined: three requests in one write on one connection.
    one(request(b"/p1", close=False) + request(b"/p2?q=2", close=False) + request(b"/p3"), 3)
    # Left unfinished: nginx answers 408 after client_header_timeout.
    one(b"GET /slow HTTP/1.1\r\nHost: localhost\r\n")
    print(logged)


def split_request(line):
    """As nginx/scanner.lua splits $request: first and last space."""
    p = line.find(" ")
    if p < 0:
        return {}
    q = line.rfind(" ")
    parts = {}
    if q > p and line[q + 1:q + 6] == "HTTP/":
        parts["server_protocol"] = line[q + 1:]
    else:
        q = len(line)
    if p > 0:
        parts["request_method"] = line[:p]
    if q > p + 1:
        parts["request_uri"] = line[p + 1:q]
    return parts


def number(text, kind):
    """The number the decoder makes of text, or the text."""
    try:
        return int(text) if kind == "integer" and text.isdigit() else float(text) \
            if kind == "double" and text.replace(".", "", 1).isdigit() else text
    except ValueError:
        return text


def typed_list(text, kind):
    values = [v for group in text.split(" : ") for v in group.split(", ")]
    if kind != "list_string":
        scalar = "integer" if kind == "list_integer" else "double"
        converted = [number(v, scalar) for v in values]
        if all(not isinstance(v, str) for v in converted):
            values = converted
    return values[0] if len(values) == 1 else values


def iso_ms(msec):
    seconds, _, millis = msec.partition(".")
    moment = datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + (millis + "000")[:3] + "Z"


def expected(record, default_line):
    fields, out = {}, {"@version": "1", "message": default_line, "type": "nginx"}
    for name, kind in VARIABLES:
        value = record[name]
        if kind == "request":
            for part in ("request_method", "request_uri", "server_protocol"):
                fields.pop(part, None)
            if value != "":
                fields.update(split_request(value))
        if value == "":
            fields.pop(name, None)
        elif kind == "timestamp":
            out["@timestamp"] = iso_ms(value)
        elif kind.startswith("list_"):
            fields[name] = typed_list(value, kind)
        else:
            fields[name] = number(value, kind) if kind in NUMERIC else value
    for name, value in fields.items():
        out["fields." + name if name in HEADER_KEYS else name] = value
    return out


def read_lines(path):
    with open(path, "rb") as f:
        return [line.decode("utf-8", "replace") for line in f.read().split(b"\n")[:-1]]


def compare(out_path, json_path, default_path):
    got = [json.loads(line) for line in read_lines(out_path)]
    records = [json.loads(line) for line in read_lines(json_path)]
    lines = read_lines(default_path)
    problems = []
    if not (len(got) == len(records) == len(lines)):
        problems.append("counts: %d decoded, %d json records, %d default lines"
                        % (len(got), len(records), len(lines)))
    for n, (message, record, line) in enumerate(zip(got, records, lines), 1):
        want = expected(record, line)
        for key in sorted(set(want) | set(message)):
            if want.get(key) != message.get(key):
                problems.append("line %d: %s: expected %r, got %r"
                                % (n, key, want.get(key), message.get(key)))
    print("\n".join(problems) if problems else "ok %d" % len(got))


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "formats":
        formats()
    elif command == "ports":
        ports(int(sys.argv[2]))
    elif command == "send":
        send(int(sys.argv[2]))
    elif command == "compare":
        compare(*sys.argv[2:5])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
