#!/usr/bin/env python3
"""A raw syslog client for the end-to-end specs: sends exactly the bytes it
is given, well-formed or not, over the transports lumberjit's syslog_input
listens on, and reports what the server did with the connection.

Addresses are written as lumberjit logs them: tcp://HOST:PORT,
tls://HOST:PORT, udp://HOST:PORT, unix:/path (datagrams), unix-stream:/path.

  syslog_client.py send ADDRESS FILE [--reset] [--linger S] [--wait-close S]
                        [--stay-open]
                        [--ca CA] [--cert CERT --key KEY]
      Connects, sends FILE's bytes as they are, prints "sent" once the
      kernel holds them all, then closes: normally (FIN),
      or with --reset abruptly (RST, as a client that dies). --linger keeps
      the connection open S seconds after sending; --wait-close waits up to
      S seconds for the server to close and prints "closed by server" when
      it does (after closing its own side, unless --stay-open, as an idle
      client that keeps its connection). For udp:// and unix: each line of FILE is one datagram.
      TLS: the server is verified against --ca (by its IP address or name).

  syslog_client.py hold ADDRESS N [--speak --go FILE] [--ca CA]
                        [--cert CERT --key KEY]
      Opens N connections and keeps them open, then opens one more and
      prints "extra: closed by server" when the server closes it within 5 s,
      else "extra: open"; then sends "<13>held I\\n" on each of the N (I from
      1) and closes them. With --speak the N send first, and the extra is
      opened once FILE exists (the spec saw their messages arrive). For
      max_connections.

  syslog_client.py crowd ADDRESS N [--hosts K] [--speak] [--go FILE]
      Opens N plain TCP connections (to a tls:// address too: no
      handshake), their source addresses 127.0.0.2, 127.0.0.3, ... in turn
      over K hosts (default 1), that send nothing, or with --speak
      "<13>crowd I\\n" each as it opens (I from 1); prints "open N", waits until
      FILE exists (at most 60 s), prints "closed by server: M" (how many
      the server had closed), and closes them. For connection slots and
      file descriptors.

  --source IP (send, hold): the source address to connect from.

Exit status: 0 when every byte was handed to the kernel, 1 on a failure to
connect or send (the error on stderr), 2 on bad arguments. To add a
behaviour: a new option of `send`, or a new subcommand with its function.
"""

import argparse
import os
import resource
import socket
import ssl
import struct
import sys
import time


def parse_address(address):
    """'tcp://127.0.0.1:5514' -> ('tcp', ('127.0.0.1', 5514)); 'unix:/p' -> ('unix', '/p')."""
    for scheme in ("unix-stream:", "unix:"):
        if address.startswith(scheme):
            return scheme[:-1], address[len(scheme):]
    scheme, rest = address.split("://", 1)
    host, port = rest.rsplit(":", 1)
    return scheme, (host.strip("[]"), int(port))


def tls_context(args):
    context = ssl.create_default_context(cafile=args.ca)
    if args.cert:
        context.load_cert_chain(args.cert, args.key)
    return context


def connect(scheme, target, args):
    if scheme == "unix-stream":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(target)
        return sock
    source = (args.source, 0) if getattr(args, "source", None) else None
    sock = socket.create_connection(target, timeout=10, source_address=source)
    if scheme == "tls":
        sock = tls_context(args).wrap_socket(sock, server_hostname=target[0])
    return sock


def send_datagrams(scheme, target, data):
    family = socket.AF_UNIX if scheme == "unix" else socket.AF_INET6 if ":" in target[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    for line in data.split(b"\n"):
        if line:
            sock.sendto(line, target)
    sock.close()


def wait_for_close(sock, seconds):
    """True when the server closes (EOF, reset or TLS alert) within seconds."""
    deadline = time.monotonic() + seconds
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            if not sock.recv(65536):
                return True
        except (socket.timeout, ssl.SSLWantReadError):
            continue
        except (ConnectionError, ssl.SSLError, OSError):
            return True
    return False


def close(sock, reset):
    if reset:
        # SO_LINGER with a zero timeout: close() sends RST, not FIN.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def send(args):
    scheme, target = parse_address(args.address)
    with open(args.file, "rb") as f:
        data = f.read()
    if scheme in ("udp", "unix"):
        send_datagrams(scheme, target, data)
        return 0
    sock = connect(scheme, target, args)
    sock.settimeout(60)
    sock.sendall(data)
    print("sent", flush=True)
    if args.linger:
        time.sleep(args.linger)
    if args.wait_close:
        if scheme != "tls" and not args.stay_open:
            sock.shutdown(socket.SHUT_WR)
        if wait_for_close(sock, args.wait_close):
            print("closed by server")
    close(sock, args.reset)
    return 0


def wait_for_file(path, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not os.path.exists(path):
        time.sleep(0.05)


def hold(args):
    scheme, target = parse_address(args.address)
    held = [connect(scheme, target, args) for _ in range(args.n)]
    if args.speak:
        for i, sock in enumerate(held, 1):
            sock.sendall(b"<13>held %d\n" % i)
        wait_for_file(args.go, 30)
    extra = connect(scheme, target, args)
    print("extra: closed by server" if wait_for_close(extra, 5) else "extra: open", flush=True)
    extra.close()
    for i, sock in enumerate(held, 1):
        if not args.speak:
            sock.sendall(b"<13>held %d\n" % i)
        sock.close()
    return 0


def closed_by_server(sock):
    """Whether the server closed it (EOF or reset), without waiting."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def crowd(args):
    _, target = parse_address(args.address)
    # As many sockets as the hard limit allows.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    for i in range(1, args.n + 1):
        source = "127.0.0.%d" % (2 + (i - 1) % args.hosts)
        socks.append(socket.create_connection(target, timeout=10, source_address=(source, 0)))
        if args.speak:
            socks[-1].sendall(b"<13>crowd %d\n" % i)
    print("open %d" % len(socks), flush=True)
    wait_for_file(args.go, 60)
    print("closed by server: %d" % sum(closed_by_server(s) for s in socks), flush=True)
    for sock in socks:
        sock.close()
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    send_parser = commands.add_parser("send")
    send_parser.add_argument("address")
    send_parser.add_argument("file")
    send_parser.add_argument("--reset", action="store_true")
    send_parser.add_argument("--linger", type=float, default=0)
    send_parser.add_argument("--wait-close", type=float, default=0)
    send_parser.add_argument("--stay-open", action="store_true")
    hold_parser = commands.add_parser("hold")
    hold_parser.add_argument("address")
    hold_parser.add_argument("n", type=int)
    hold_parser.add_argument("--speak", action="store_true")
    hold_parser.add_argument("--go")
    crowd_parser = commands.add_parser("crowd")
    crowd_parser.add_argument("address")
    crowd_parser.add_argument("n", type=int)
    crowd_parser.add_argument("--hosts", type=int, default=1)
    crowd_parser.add_argument("--speak", action="store_true")
    crowd_parser.add_argument("--go")
    for p in (send_parser, hold_parser):
        p.add_argument("--ca")
        p.add_argument("--cert")
        p.add_argument("--key")
        p.add_argument("--source")
    args = parser.parse_args()
    try:
        return {"send": send, "hold": hold, "crowd": crowd}[args.command](args)
    except (OSError, ssl.SSLError) as error:
        print("syslog_client.py: %s: %s" % (args.address, error), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
