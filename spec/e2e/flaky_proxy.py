#!/usr/bin/env python3
"""A misbehaving TCP proxy on 127.0.0.1, between lumberjit and its receiver.

    flaky_proxy.py --listen PORT --target PORT --dir DIR
                   [--seed N --chaos SECONDS] [--control PORT]

It misbehaves as an uplink does, in modes:
  pass       forwards both ways
  drop       connections break: the proxy closes the client's side (what
             the client still sends is read and forwarded, so a byte the
             proxy's kernel acknowledged is never lost) and then the
             receiver's; new connections are refused (an RST: nothing
             listens)
  blackhole  nothing moves and nothing answers: connections neither read
             nor written, new ones not accepted (past the listen backlog's
             one the kernel drops their SYNs): only a timeout reveals it;
             once it ends, what was held moves on, as TCP does after a
             short outage
  stall      a connection stops in the middle of what it was forwarding
  throttle   20 KB/s each way, all connections together

With --seed and --chaos it picks modes at random (the seed makes the same
schedule) for that many seconds, each for 1 to 5 s with a second of pass
between and every mode once in each round of four, then heals (pass) for
good. --control PORT takes lines on a TCP
socket: "mode NAME" (until the next), "chaos SECONDS" (the schedule, from
now), "heal" (pass); each answered "ok". DIR gets proxy.log (one line a mode change, "healed") and
rates (a line a second: seconds since start, bytes forwarded towards the
receiver, bytes back). Bytes the proxy read are never thrown away: a
record is lost only if lumberjit loses it.
"""
import argparse
import os
import random
import select
import socket
import struct
import threading
import time

MODES = ["drop", "blackhole", "stall", "throttle"]
THROTTLE = 20 * 1024
CHUNK = 16384
RCVBUF = 16384

lock = threading.Lock()
state = {"mode": "pass", "up": 0, "down": 0}
start = time.monotonic()


def log(args, line):
    with open(os.path.join(args.dir, "proxy.log"), "a") as f:
        f.write("%.1f %s\n" % (time.monotonic() - start, line))


def set_mode(args, mode, why):
    with lock:
        if state["mode"] == mode:
            return
        state["mode"] = mode
    log(args, "mode %s (%s)" % (mode, why))


def mode():
    with lock:
        return state["mode"]


def reset(sock):
    """Closes with an RST, as a broken path's far end answers."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class Bucket:
    """THROTTLE bytes a second, shared by the connections of one way."""

    def __init__(self):
        self.tokens = 0.0
        self.at = time.monotonic()
        self.lock = threading.Lock()

    def take(self, n):
        while True:
            with self.lock:
                now = time.monotonic()
                self.tokens = min(THROTTLE / 4, self.tokens + (now - self.at) * THROTTLE)
                self.at = now
                if self.tokens >= n:
                    self.tokens -= n
                    return
                wait = (n - self.tokens) / THROTTLE
            time.sleep(min(wait, 0.05))


buckets = {"up": Bucket(), "down": Bucket()}


class Conn:
    def __init__(self, client, target):
        self.client = client
        self.target = target
        self.server = None
        self.done = threading.Event()

    def send(self, sock, data, way):
        """Forwards data, held while the path is blackholed or stalled,
        slowed while throttled; False once the connection is gone."""
        first = True
        while data:
            m = mode()
            if self.done.is_set():
                return False
            if m == "blackhole" or (m == "stall" and not first):
                time.sleep(0.05)
                continue
            n = len(data)
            if m == "stall":
                n = max(1, n // 2)  # part of it, then it stalls
            if m == "throttle":
                n = min(n, 1024)
                buckets[way].take(n)
            try:
                sock.sendall(data[:n])
            except OSError:
                return False
            with lock:
                state[way] += n
            data = data[n:]
            first = False
        return True

    def pump(self, src, dst, way):
        while not self.done.is_set():
            m = mode()
            if m == "blackhole":
                time.sleep(0.05)  # read nothing: the sender's window closes
                continue
            if m == "drop":
                # The way towards the receiver drains and breaks it: the
                # other, closing first, would throw away what it holds.
                if way == "up":
                    self.drop(src, dst, way)
                return
            try:
                ready, _, _ = select.select([src], [], [], 0.1)
                if not ready:
                    continue
                data = src.recv(CHUNK)
            except OSError:
                break
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                break
            if not self.send(dst, data, way):
                break
        self.close()

    def drop(self, src, dst, way):
        """Breaks the connection as a receiver that closes it does: a FIN
        to the client, whose bytes are still read and forwarded until it
        closes its side (so the receiver gets every byte the proxy's kernel
        acknowledged), then the receiver's side is closed."""
        try:
            src.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        while True:
            try:
                data = src.recv(CHUNK)
            except OSError:
                break
            if not data:
                break
            try:
                dst.sendall(data)
            except OSError:
                break
            with lock:
                state[way] += len(data)
        self.close()

    def close(self):
        if self.done.is_set():
            return
        self.done.set()
        reset(self.client)
        if self.server:
            try:
                self.server.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self.server.close()

    def run(self):
        try:
            self.server = socket.create_connection(("127.0.0.1", self.target))
        except OSError:
            reset(self.client)
            return
        threading.Thread(target=self.pump, args=(self.server, self.client, "down"), daemon=True).start()
        self.pump(self.client, self.server, "up")


def listen(port):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # The connections' receive buffers, small as an uplink's in-flight
    # window: loopback's megabytes would take a blackholed sender's records
    # by the thousand before it notices anything.
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    listener.bind(("127.0.0.1", port))
    listener.listen(1)  # a small backlog: see accept_loop
    return listener


def accept_loop(args):
    listener = listen(args.listen)
    log(args, "listening on %d for %d" % (args.listen, args.target))
    while True:
        m = mode()
        # Dropping: connection attempts are refused (an RST to the SYN),
        # with nothing listening.
        if m == "drop":
            if listener:
                listener.close()
                listener = None
            time.sleep(0.05)
            continue
        if not listener:
            listener = listen(args.listen)
        # A blackholed path drops connection attempts too: nothing takes
        # them from the backlog, and once it is full the kernel drops the
        # SYNs, so only the client's connect timeout tells.
        if m == "blackhole":
            time.sleep(0.05)
            continue
        if not select.select([listener], [], [], 0.1)[0]:
            continue
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=Conn(client, args.target).run, daemon=True).start()


def schedule(args):
    rng = random.Random(args.seed)
    end = time.monotonic() + args.chaos
    while time.monotonic() < end:
        # Every mode once a round, in a random order: a round takes at
        # most 24 s, so a short run sees each of them.
        for m in rng.sample(MODES, len(MODES)):
            if time.monotonic() >= end:
                break
            set_mode(args, m, "seed %d" % args.seed)
            time.sleep(min(rng.uniform(1, 5), max(0, end - time.monotonic())))
            set_mode(args, "pass", "between")
            time.sleep(1)
    set_mode(args, "pass", "chaos over")
    log(args, "healed")


def control(args):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", args.control))
    srv.listen(4)
    while True:
        c, _ = srv.accept()
        f = c.makefile("rw")
        for line in f:
            words = line.split()
            if words[:1] == ["mode"] and len(words) == 2 and words[1] in MODES + ["pass"]:
                set_mode(args, words[1], "control")
            elif words[:1] == ["chaos"] and len(words) == 2:
                args.chaos = float(words[1])
                threading.Thread(target=schedule, args=(args,), daemon=True).start()
            elif words == ["heal"]:
                set_mode(args, "pass", "control")
                log(args, "healed")
            else:
                f.write("error\n")
                f.flush()
                continue
            f.write("ok\n")
            f.flush()
        c.close()


def rates(args):
    last_up = last_down = 0
    with open(os.path.join(args.dir, "rates"), "a") as f:
        while True:
            time.sleep(1)
            with lock:
                up, down = state["up"], state["down"]
            f.write("%.0f %d %d\n" % (time.monotonic() - start, up - last_up, down - last_down))
            f.flush()
            last_up, last_down = up, down


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--target", type=int, required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chaos", type=float, default=0)
    ap.add_argument("--control", type=int)
    args = ap.parse_args()
    threading.Thread(target=rates, args=(args,), daemon=True).start()
    if args.control:
        threading.Thread(target=control, args=(args,), daemon=True).start()
    if args.chaos > 0:
        threading.Thread(target=schedule, args=(args,), daemon=True).start()
    accept_loop(args)


if __name__ == "__main__":
    main()
