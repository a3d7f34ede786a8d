#!/usr/bin/env python3
"""The running listener's fuzzer (spec/e2e/listener_fuzz_spec.lua): many
connections at once to a running lumberjit's syslog_input listeners, for a
bounded time, sending a seeded random mix of well-formed frames, garbage
and abrupt closes; then the check of what lumberjit wrote against what was
sent. It starts nothing itself.

  listener_fuzz.py run PLAN
      PLAN (JSON): {"seed": N, "seconds": S, "workers": W, "ca": CA,
      "client_cert", "client_key", "other_cert", "other_key": PEM files
      (certs.lua's), "sent": PATH, "targets": [{"name": ..., "address":
      ADDRESS, "framing": "auto" | "octet_counted" | "newline", "max_line":
      N, "body": "any" | "5424" | "3164", "verify": the listener verifies
      client certificates, "tight": its deadlines and slots are short (its
      connections sometimes pause into them)}]}, ADDRESS as lumberjit logs
      it (tcp://, tls://, udp://, unix:, unix-stream:). Writes to "sent" a
      JSON object: every id sent ("sent": {id: target}), the ids lumberjit
      must have taken ("guaranteed": [id]), the UDP ones ("udp": [id]) and
      what was done ("stats"); prints the stats.

  listener_fuzz.py check SENT OUT DEAD
      Reads the records (OUT: JSON lines, any encoder that keeps the
      message) and dead letters (DEAD) lumberjit wrote and prints a JSON
      object: "missing" (guaranteed ids in neither), "twice" (ids in more
      than one record or dead letter), "unknown" (ids never sent),
      "no_reason" (dead letters without a reason), "udp_missing" (UDP ids
      in neither: the kernel may drop datagrams, which lumberjit counts),
      and counts.

The oracle is exact because a connection's frames are only counted as
guaranteed while the framing rules say they survive (frame.h): a
well-formed frame sent whole on a connection that is still in step and
then closed cleanly (FIN, after which the client reads until the server
closes, so no RST discards what the server's kernel holds). Garbage that
keeps the connection in step is a line that ends in LF: any bytes on a
newline-framed connection; on an octet-counted one, bytes that start with
no digit, CR or LF and hold no LF before the last, so the reader's
resync at the LF lands on the next frame. Anything else (a truncated frame,
a bogus or huge count, random bytes with LFs, TLS garbage, an RST) ends
the connection's guarantees: later frames are sent and may be swallowed,
but must never show up twice. Nothing is guaranteed on a tight listener
(its deadlines and slots close connections) nor from a TLS client a
verifying listener refuses. Datagrams stand alone: each well-formed one is
guaranteed, on UDP unless the kernel dropped it. Each id is unique ("lfz-",
10 digits, "z"): a frame cut short never completes one, so every id found
in a record was sent whole in one frame.
"""

import base64
import json
import os
import random
import re
import socket
import ssl
import struct
import sys
import threading
import time

# Its address parser is syslog_client.py's, beside this file; no
# __pycache__ is left in the tree for it.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syslog_client import parse_address  # noqa: E402

ID_RE = re.compile(rb"lfz-(\d{10})z")
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


class Ids:
    """Unique ids and what became of them, shared by the worker threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.next = 0
        self.sent = {}
        self.guaranteed = []
        self.udp = []
        self.stats = {"connections": 0, "datagrams": 0, "frames": 0, "guaranteed": 0,
                      "garbage": 0, "bytes": 0, "resets": 0, "half_closes": 0,
                      "tls_garbage": 0, "server_closed": 0, "errors": 0}

    def new(self, target):
        with self.lock:
            self.next += 1
            token = "lfz-%010dz" % self.next
            self.sent[token] = target
            return token

    def count(self, **kv):
        with self.lock:
            for k, v in kv.items():
                self.stats[k] = self.stats.get(k, 0) + v

    def settle(self, target, tokens, udp=False):
        """tokens must have reached lumberjit (UDP: unless the kernel dropped them)."""
        with self.lock:
            (self.udp if udp else self.guaranteed).extend(tokens)
            if not udp:
                self.stats["guaranteed"] += len(tokens)
            key = "guaranteed " + target["name"]
            self.stats[key] = self.stats.get(key, 0) + len(tokens)


def body(rng, kind, token, room):
    """A syslog message carrying token, at most room bytes, no LF."""
    pri = rng.randrange(0, 192)
    if kind == "any":
        kind = rng.choice(("5424", "3164"))
    if kind == "5424":
        head = "<%d>1 2026-11-27T03:%02d:%02d.%03dZ host%d app %d ID%d - " % (
            pri, rng.randrange(60), rng.randrange(60), rng.randrange(1000), rng.randrange(9),
            rng.randrange(99999), rng.randrange(99))
    else:
        head = "<%d>%s %2d %02d:%02d:%02d host%d app[%d]: " % (
            pri, rng.choice(MONTHS), rng.randrange(1, 29), rng.randrange(24), rng.randrange(60),
            rng.randrange(60), rng.randrange(9), rng.randrange(99999))
    text = head + token
    fill = rng.choice((0, rng.randrange(64), rng.randrange(max(1, room - len(text)) + 1)))
    fill = max(0, min(fill, room - len(text) - 1))
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 .:=[]\"\\/\t-_{}"
    return (text + " " + "".join(rng.choice(alphabet) for _ in range(fill))).encode()[:room]


def noise(rng, n, lf=True, nul_heavy=False):
    """n random bytes; without LF unless lf."""
    if nul_heavy:
        data = bytearray(n)
        for _ in range(n // 8):
            data[rng.randrange(n)] = rng.randrange(256)
    else:
        data = bytearray(rng.getrandbits(8) for _ in range(n))
    if not lf:
        data = data.replace(b"\n", b" ")
    return bytes(data)


def frame(rng, mode, msg):
    if mode == "octet":
        # A trailing LF or CRLF is no part of the message (frame.h).
        end = rng.choice((b"", b"", b"\n", b"\r\n"))
        return b"%d %s" % (len(msg) + len(end), msg + end)
    return msg + rng.choice((b"\n", b"\n", b"\r\n"))


def resync_garbage(rng, mode, max_line):
    """Bytes a reader in step turns into a message or dead letter and then
    resyncs after (see the module's doc)."""
    n = rng.choice((1, rng.randrange(1, 64), rng.randrange(1, 2 * max_line + 2)))
    data = noise(rng, n, lf=False, nul_heavy=rng.random() < 0.2)
    if mode == "octet":
        first = rng.choice(b"abcxyz<>! \0\x7f\xff-+0")
        data = bytes([first]) + data[1:]
    return data + b"\n"


def chaos(rng, mode, msg, max_line):
    """Bytes after which nothing on the connection is guaranteed."""
    pick = rng.randrange(8)
    if pick == 0:  # a frame cut short
        f = frame(rng, mode, msg)
        return f[:rng.randrange(len(f))]
    if pick == 1:  # a count bigger than what follows
        return b"%d %s" % (len(msg) + rng.randrange(1, 5000), msg)
    if pick == 2:  # a huge count, or more digits than a count may have
        return rng.choice((b"999999999 ", b"1234567890123 ", b"4294967296 ")) + msg
    if pick == 3:  # a bogus count
        return rng.choice((b"12x", b"0 ", b"7\0", b"-5 ", b"3 \n", b"00012 ")) + msg
    if pick == 4:  # NULs
        return b"\0" * rng.randrange(1, 3 * max_line)
    if pick == 5:  # random bytes, LFs and all
        return noise(rng, rng.randrange(1, 3 * max_line))
    if pick == 6:  # a frame of max_line + 1 and more
        return frame(rng, mode, msg + b"x" * (max_line + 1 - len(msg) + rng.randrange(3)))
    return noise(rng, rng.randrange(1, 200)) + frame(rng, mode, msg)


class Conn:
    """One stream connection's script: frames and garbage in a random mix,
    written in random pieces, then a clean or abrupt end."""

    def __init__(self, fuzz, target, rng):
        self.fuzz, self.target, self.rng = fuzz, target, rng
        self.scheme, self.where = parse_address(target["address"])
        self.max_line = target["max_line"]
        self.framing = target["framing"]
        self.sock = None
        self.raw = None
        # Whether the server may close the connection under the client: an
        # error then is no failure, and nothing on it is guaranteed.
        self.may_close = bool(target.get("tight"))

    def open(self):
        family = socket.AF_UNIX if self.scheme == "unix-stream" else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(20)
        s.connect(self.where)
        if family == socket.AF_INET:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.raw = s
        self.sock = s

    def write(self, data):
        """Writes data in random pieces (reads of any size on the other side)."""
        rng = self.rng
        while data:
            n = rng.choice((len(data), 1, rng.randrange(1, len(data) + 1)))
            self.sock.sendall(data[:n])
            data = data[n:]

    def pause(self):
        """On a tight listener: silences that run into its deadlines."""
        if self.target.get("tight") and self.rng.random() < 0.3:
            time.sleep(self.rng.uniform(0, 0.6))

    def run(self):
        rng, ids = self.rng, self.fuzz.ids
        self.open()
        ids.count(connections=1, **{"connections " + self.target["name"]: 1})
        self.pause()
        if self.scheme == "tls" and rng.random() < 0.15:
            self.may_close = True
            return self.tls_garbage_first()
        if self.scheme == "tls":
            # A verifying listener refuses a client with no or a stranger's certificate.
            client = rng.choice(("good",) * 8 + ("other", "none")) if self.target.get("verify") else "none"
            self.may_close = self.may_close or (self.target.get("verify") and client != "good")
            # The plain socket is detached: the session's shuts down, resets and closes it.
            self.sock = self.raw = self.fuzz.tls[client].wrap_socket(self.raw, server_hostname=self.where[0])
        mode = {"octet_counted": "octet", "newline": "lf"}.get(self.framing) or rng.choice(("octet", "lf"))
        in_step, done, sent_bytes = True, [], 0
        for _ in range(rng.choice((0, 1, rng.randrange(1, 8), rng.randrange(1, 60)))):
            roll = rng.random()
            token = ids.new(self.target["name"])
            msg = body(rng, self.target["body"], token, self.max_line)
            if roll < 0.7 or (done == [] and self.framing == "auto" and in_step):
                # On an auto listener the first frame decides the framing: it is a good one.
                data = frame(rng, mode, msg)
                if in_step:
                    done.append(token)
                ids.count(frames=1)
            elif roll < 0.9 or not in_step:
                data = resync_garbage(rng, mode, self.max_line)
                ids.count(garbage=1)
            else:
                data = chaos(rng, mode, msg, self.max_line)
                in_step = False
                ids.count(garbage=1)
            self.write(data)
            sent_bytes += len(data)
            self.pause()
        ids.count(bytes=sent_bytes)
        end = rng.random()
        if self.scheme == "tls" and end < 0.1:
            self.may_close = True
            self.tls_garbage_after()
        elif end < 0.25:
            self.reset_mid_frame(mode)
        elif self.close_cleanly() and not self.may_close:
            # Frames sent whole before any garbage that puts the reader out
            # of step were cut before it came: they stand.
            ids.settle(self.target, done)

    def close_cleanly(self):
        """Half-closes and reads until the server closes: a FIN, never an RST
        (which a TLS session's unread tickets would make); True when the server
        closed in time."""
        self.fuzz.ids.count(half_closes=1)
        if self.scheme == "tls" and self.rng.random() < 0.5:
            try:
                self.sock = self.sock.unwrap()  # close_notify first
            except (ssl.SSLError, OSError):
                pass
        self.raw.shutdown(socket.SHUT_WR)
        self.raw.settimeout(30)
        try:
            while self.raw.recv(65536):
                pass
            return True
        except socket.timeout:
            self.fuzz.ids.count(timeouts=1)
            return False
        except OSError:
            # A reset from the server: it closed with bytes unread, which
            # the check then finds missing.
            return True

    def reset_mid_frame(self, mode):
        rng = self.rng
        if rng.random() < 0.7:
            msg = body(rng, self.target["body"], self.fuzz.ids.new(self.target["name"]), self.max_line)
            f = frame(rng, mode, msg)
            self.sock.sendall(f[:rng.randrange(len(f))])
        self.fuzz.ids.count(resets=1)
        self.raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.raw.close()

    def tls_garbage_first(self):
        """Bytes no TLS client sends: noise, a record header that lies, plain
        text, or a real ClientHello cut short, with bytes flipped or garbage
        after it, and then maybe a stall into the handshake's deadline."""
        rng = self.rng
        self.fuzz.ids.count(tls_garbage=1)
        hello = client_hello(self.fuzz.tls["none"], self.where[0])
        if rng.random() < 0.5:
            hello = bytearray(hello)
            for _ in range(rng.randrange(1, 4)):
                hello[rng.randrange(len(hello))] = rng.randrange(256)
            hello = bytes(hello)
        data = rng.choice((noise(rng, rng.randrange(1, 3000)),
                           b"\x16\x03\x01" + struct.pack(">H", rng.randrange(65536)) + noise(rng, rng.randrange(300)),
                           b"<13>plain text to a TLS port\n",
                           hello[:rng.randrange(len(hello))],
                           hello + noise(rng, rng.randrange(1, 500))))
        self.write(data)
        self.pause()
        if rng.random() < 0.5:
            self.raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.raw.close()

    def tls_garbage_after(self):
        """Once the session is up: bytes that are no TLS record, or a record
        header that lies, or plain text after close_notify."""
        rng = self.rng
        self.fuzz.ids.count(tls_garbage=1)
        if rng.random() < 0.3:
            try:
                self.sock.unwrap()
            except (ssl.SSLError, OSError):
                pass
        # A second socket on the same descriptor writes past the session.
        raw = socket.socket(fileno=os.dup(self.sock.fileno()))
        raw.settimeout(20)
        data = rng.choice((noise(rng, rng.randrange(1, 2000)),
                           b"\x17\x03\x03" + struct.pack(">H", rng.randrange(65536)) + noise(rng, rng.randrange(100)),
                           b"<13>plain after the handshake\n"))
        try:
            raw.sendall(data)
            if rng.random() < 0.5:
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        finally:
            raw.close()
            self.sock.close()


def client_hello(context, name):
    """The first flight of a real handshake, as bytes."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    session = context.wrap_bio(incoming, outgoing, server_hostname=name)
    try:
        session.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def datagrams(fuzz, target, rng):
    """A burst of datagrams: well-formed ones, each a message, and garbage."""
    scheme, where = parse_address(target["address"])
    family = socket.AF_UNIX if scheme == "unix" else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.settimeout(20)
    ids, udp = fuzz.ids, scheme == "udp"
    ids.count(**{"bursts " + target["name"]: 1})
    done = []
    try:
        for _ in range(rng.randrange(1, 40)):
            if rng.random() < 0.7:
                token = ids.new(target["name"])
                data = body(rng, target["body"], token, target["max_line"])
                data += rng.choice((b"", b"\n", b"\r\n"))
                ids.count(frames=1)
            else:
                token = None
                # Empty, noise, NULs, longer than max_line, or (seldom) than the 64 KiB read.
                n = rng.choice((0, rng.randrange(1, 100), rng.randrange(1, 2 * target["max_line"] + 2)))
                if rng.random() < 0.05:
                    n = 65507 if udp else rng.randrange(65000, 70000)
                data = noise(rng, n, nul_heavy=rng.random() < 0.3)
                ids.count(garbage=1)
            try:
                sock.sendto(data, where)
            except OSError:
                # A datagram the kernel would not take was never sent.
                ids.count(errors=1)
                continue
            ids.count(datagrams=1, bytes=len(data))
            if token:
                done.append(token)
            if udp and rng.random() < 0.3:
                time.sleep(0.001)  # UDP has no pushback: pace it a little
    finally:
        sock.close()
    ids.settle(target, done, udp=udp)


class Fuzz:
    def __init__(self, plan):
        self.plan = plan
        self.ids = Ids()
        self.deadline = time.monotonic() + plan["seconds"]
        # TLS clients: with the certificate the CA signed, a stranger's, none.
        self.tls = {}
        for client, cert in (("good", "client"), ("other", "other"), ("none", None)):
            self.tls[client] = ssl.create_default_context(cafile=plan["ca"])
            if cert:
                self.tls[client].load_cert_chain(plan[cert + "_cert"], plan[cert + "_key"])
        self.failures = []

    def worker(self, n):
        rng = random.Random("%d/%d" % (self.plan["seed"], n))
        targets = self.plan["targets"]
        while time.monotonic() < self.deadline:
            target = rng.choice(targets)
            scheme, _ = parse_address(target["address"])
            conn = None
            try:
                if scheme in ("udp", "unix"):
                    datagrams(self, target, rng)
                else:
                    conn = Conn(self, target, rng)
                    conn.run()
            except (OSError, ssl.SSLError) as error:
                # Its frames were never counted as guaranteed.
                if conn and conn.may_close:
                    self.ids.count(server_closed=1)
                else:
                    self.ids.count(errors=1)
                    self.failures.append("%s: %s" % (target["name"], error))
            finally:
                if conn and conn.sock:
                    conn.sock.close()

    def run(self):
        threads = [threading.Thread(target=self.worker, args=(n,)) for n in range(self.plan["workers"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def run(plan_path):
    with open(plan_path) as f:
        plan = json.load(f)
    fuzz = Fuzz(plan)
    fuzz.run()
    ids = fuzz.ids
    stats = dict(ids.stats, failures=fuzz.failures[:20], failure_count=len(fuzz.failures))
    with open(plan["sent"], "w") as f:
        json.dump({"sent": ids.sent, "guaranteed": ids.guaranteed, "udp": ids.udp, "stats": stats}, f)
    print(json.dumps(stats), flush=True)
    return 0


def found_ids(text):
    return {m.group(0).decode() for m in ID_RE.finditer(text)}


def check(sent_path, out_path, dead_path):
    with open(sent_path) as f:
        sent = json.load(f)
    seen, where, no_reason = {}, {}, []

    def note(tokens, kind):
        for token in tokens:
            seen[token] = seen.get(token, 0) + 1
            where.setdefault(token, []).append(kind)

    if os.path.exists(out_path):
        with open(out_path, "rb") as f:
            for line in f:
                note(found_ids(line), "out")
    dead = 0
    if os.path.exists(dead_path):
        with open(dead_path, "rb") as f:
            for line in f:
                letter = json.loads(line)
                dead += 1
                payload = letter.get("payload", "").encode("utf-8", "surrogateescape")
                if "payload_base64" in letter:
                    payload = base64.b64decode(letter["payload_base64"])
                tokens = found_ids(payload)
                if tokens and not letter.get("reason"):
                    no_reason.append(line.decode("utf-8", "replace")[:300])
                note(tokens, "dead")
    guaranteed = sent["guaranteed"]
    result = {
        "missing": ["%s (%s)" % (t, sent["sent"][t]) for t in guaranteed if t not in seen][:50],
        "missing_count": sum(1 for t in guaranteed if t not in seen),
        "twice": {t: where[t] for t, n in seen.items() if n > 1},
        "unknown": [t for t in seen if t not in sent["sent"]][:50],
        "no_reason": no_reason[:10],
        "udp_missing": sum(1 for t in sent["udp"] if t not in seen),
        "guaranteed": len(guaranteed),
        "delivered": sum(1 for t in guaranteed if "out" in where.get(t, [])),
        "dead_lettered": sum(1 for t in guaranteed if where.get(t) == ["dead"]),
        "seen": len(seen),
        "dead_letters": dead,
    }
    print(json.dumps(result), flush=True)
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        return run(sys.argv[2])
    if len(sys.argv) == 5 and sys.argv[1] == "check":
        return check(*sys.argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
