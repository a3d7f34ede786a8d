#!/usr/bin/env python3
"""The HTTP endpoint's specs' raw client (http_spec.lua): what curl cannot
send or hold.

  http_client.py PORT raw      sends standard input as it is, then prints
                               all the server answers until it closes
  http_client.py PORT hold N   holds N connections open, then opens one
                               more and prints what it got ("closed" when
                               the server closed it without an answer);
                               then, the N closed, asks /health once more
                               and prints that answer's status line
"""
import socket
import sys
import time


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def read_all(s):
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        out += chunk
    return out


def raw(port):
    s = connect(port)
    s.sendall(sys.stdin.buffer.read())
    sys.stdout.buffer.write(read_all(s))


def hold(port, n):
    held = [connect(port) for _ in range(n)]
    # Each is accepted before the next one counts: one request answered on
    # each says so.
    for s in held:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 ")
    extra = connect(port)
    try:
        extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        got = read_all(extra)
    except OSError:
        got = b""
    print(got.split(b"\r\n")[0].decode() if got else "closed")
    for s in held:
        s.close()
    # The server hears the closes on its next loop turn.
    for _ in range(100):
        s = connect(port)
        s.sendall(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
        got = read_all(s)
        if got:
            print(got.split(b"\r\n")[0].decode())
            return
        time.sleep(0.05)
    print("closed")


if __name__ == "__main__":
    port = int(sys.argv[1])
    if sys.argv[2] == "raw":
        raw(port)
    else:
        hold(port, int(sys.argv[3]))
