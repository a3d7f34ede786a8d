"""Stream senders that stay connected across reloads, for reload_spec.lua.

  reload_streams.py flow SECONDS RATE ENDPOINT...
      Each endpoint is one connection that sends RATE messages a second
      ("<13>LABEL ID", ids from 1) for SECONDS, each message in two writes
      a millisecond apart, so that reloads find messages begun; then it
      closes cleanly and reads until the server closes.
  reload_streams.py split DIR ENDPOINT...
      Each connection sends the first half of one message ("<13>LABEL one"
      without its end), writes DIR/ready and waits for DIR/go, then sends
      the rest (" two") and closes as above.

ENDPOINT is LABEL=KIND:ADDRESS:FRAMING: KIND tcp (ADDRESS 127.0.0.1:PORT),
unix (a path) or tls (127.0.0.1:PORT, the CA file in $CA); FRAMING lf or
octets (RFC 6587 octet counting). Prints {"LABEL": messages sent, ...,
"errors": [...]}: a reload must cut no connection, so any error counts.
"""
import json
import os
import socket
import ssl
import sys
import threading
import time


def connect(kind, address):
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(address)
        return s
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    if kind == "tls":
        ctx = ssl.create_default_context(cafile=os.environ["CA"])
        s = ctx.wrap_socket(s, server_hostname=host)
    return s


def parse(endpoint):
    label, rest = endpoint.split("=", 1)
    kind, rest = rest.split(":", 1)
    address, framing = rest.rsplit(":", 1)
    return label, kind, address, framing


def frame(message, framing):
    return b"%d %s" % (len(message), message) if framing == "octets" \
        else message + b"\n"


def close(s):
    """Ends the connection: every byte sent is read by the server, which
    closes once it has (a reset would lose what it had not read)."""
    if isinstance(s, ssl.SSLSocket):
        try:
            s = s.unwrap()
        except ssl.SSLEOFError:
            # The server closed after our close_notify, which came after
            # every message: it read them all.
            return
    s.shutdown(socket.SHUT_WR)
    s.settimeout(30)
    while s.recv(4096):
        pass
    s.close()


def flow(endpoint, seconds, rate, sent, errors):
    label, kind, address, framing = parse(endpoint)
    try:
        s = connect(kind, address)
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            due = int((time.monotonic() - start) * rate)
            while sent[label] < due:
                data = frame(b"<13>%s %d" % (label.encode(), sent[label] + 1),
                             framing)
                half = len(data) // 2
                s.sendall(data[:half])
                time.sleep(0.001)
                s.sendall(data[half:])
                sent[label] += 1
            time.sleep(0.002)
        close(s)
    except Exception as e:  # every failure is the spec's to see
        errors.append("%s: %r" % (label, e))


def split(directory, endpoints, sent, errors):
    conns = []
    for endpoint in endpoints:
        label, kind, address, framing = parse(endpoint)
        data = frame(b"<13>%s one two" % label.encode(), framing)
        cut = data.index(b" two")
        s = connect(kind, address)
        s.sendall(data[:cut])
        conns.append((label, s, data[cut:]))
    open(os.path.join(directory, "ready"), "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(directory, "go")):
        if time.monotonic() > deadline:
            errors.append("no go within 60 s")
            return
        time.sleep(0.02)
    for label, s, rest in conns:
        try:
            s.sendall(rest)
            close(s)
            sent[label] = 1
        except Exception as e:
            errors.append("%s: %r" % (label, e))


def main():
    mode = sys.argv[1]
    sent, errors = {}, []
    if mode == "flow":
        seconds, rate = float(sys.argv[2]), int(sys.argv[3])
        threads = []
        for endpoint in sys.argv[4:]:
            sent[parse(endpoint)[0]] = 0
            threads.append(threading.Thread(
                target=flow, args=(endpoint, seconds, rate, sent, errors)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        split(sys.argv[2], sys.argv[3:], sent, errors)
    sent["errors"] = errors
    print(json.dumps(sent))


main()
