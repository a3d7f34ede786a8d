"""Reloads under load, for reload_spec.lua.

  reload_driver.py BIN DIR [RATE]

Two writers append numbered lines ("a 17", "b 4") to DIR/a.log and DIR/b.log
at RATE lines a second each (default 1000) while lumberjit tails them, with
NOTIFY_SOCKET set, and its configuration is changed under it, one reload at
a time, each after the writers ran a while:

  1. the decoder's file changes (its tag v1 -> v2): SIGHUP
  2. the output's matcher changes: SIGHUP
  3. an input is added (b, whose writer then starts): SIGHUP
  4. the writer of a stops, and once all of a is delivered, input a is
     removed: SIGHUP
  5. a broken configuration: SIGHUP (it must fail and change nothing)
  6. the configuration fixed: `lumberjit --reload -c conf.lua`

then SIGTERM. The decoder writes "TAG INPUT ID N" where N counts the calls
of its own instance (its Lua state): a kept decoder goes on counting, a
rebuilt one starts again at 1.

Prints one JSON object: the exit status, the lines each writer wrote, the
sd_notify messages, the metrics file's reload counters, and what is wrong
with the output (lost, doubled or out-of-order ids, decoder counts that
restarted where the decoder was kept).
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

BIN, DIR = sys.argv[1], sys.argv[2]
RATE = int(sys.argv[3]) if len(sys.argv) > 3 else 1000

DECODER = """
local tag = "%s"
local n = 0
function process_message(record)
  n = n + 1
  local input, id = record:match("^(%%a+) (%%d+)")
  inject_message({Type = "line", Payload = tag .. " " .. input .. " " .. id .. " " .. n})
  return 0
end
"""


def config(inputs, matcher="TRUE", broken=False):
    text = """lumberjit = { state_dir = "state", pid_file = "lumberjit.pid",
  dead_letter_path = "dead.log", metrics_path = "metrics.prom",
  metrics_interval_ms = 100, checkpoint_interval_ms = 100 }
dec = { type = "decoder", filename = "dec.lua" }
out = { type = "file_output", path = "out.log", message_matcher = %s }
""" % json.dumps(matcher)
    for name in inputs:
        text += ('%s = { type = "tail_input", paths = { "%s.log" }, decoder = "dec",'
                 ' read_from_head = true, scan_interval_ms = 50 }\n' % (name, name))
    if broken:
        text += "broken = {\n"
    with open(os.path.join(DIR, "conf.tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(DIR, "conf.tmp"), os.path.join(DIR, "conf.lua"))


def decoder(tag):
    with open(os.path.join(DIR, "dec.tmp"), "w") as f:
        f.write(DECODER % tag)
    os.rename(os.path.join(DIR, "dec.tmp"), os.path.join(DIR, "dec.lua"))


class Writer(threading.Thread):
    def __init__(self, name):
        super().__init__(daemon=True)
        self.name_ = name
        self.written = 0
        self.halt = threading.Event()

    def run(self):
        with open(os.path.join(DIR, self.name_ + ".log"), "a") as f:
            start = time.monotonic()
            while not self.halt.is_set():
                due = int((time.monotonic() - start) * RATE)
                while self.written < due:
                    self.written += 1
                    f.write("%s %d some varied text %x\n" % (self.name_, self.written,
                                                             self.written * 2654435761 % 4294967296))
                f.flush()
                time.sleep(0.01)


def out_lines():
    try:
        with open(os.path.join(DIR, "out.log")) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def delivered(input_name, last_id):
    want = " %s %d " % (input_name, last_id)
    return any(want in line for line in out_lines())


def stop_writer(writer):
    """Stops the writer and waits (20 s at most) for its last line out."""
    writer.halt.set()
    writer.join()
    deadline = time.monotonic() + 20
    while not delivered(writer.name_, writer.written) and time.monotonic() < deadline:
        time.sleep(0.05)


notices = []
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(os.path.join(DIR, "notify.sock"))
sock.settimeout(0.1)


def listen():
    while True:
        try:
            notices.append(sock.recv(4096).decode().replace("\n", "|"))
        except socket.timeout:
            continue
        except OSError:
            return


threading.Thread(target=listen, daemon=True).start()

decoder("v1")
config(["a"])
env = dict(os.environ, NOTIFY_SOCKET=os.path.join(DIR, "notify.sock"))
err = open(os.path.join(DIR, "stderr"), "w")
proc = subprocess.Popen([BIN, "-c", "conf.lua"], cwd=DIR, stderr=err, env=env)
a, b = Writer("a"), Writer("b")
a.start()


def step(seconds=0.8):
    time.sleep(seconds)


step()
decoder("v2")
proc.send_signal(signal.SIGHUP)
step()
config(["a"], matcher="Type == 'line'")
proc.send_signal(signal.SIGHUP)
step()
config(["a", "b"], matcher="Type == 'line'")
proc.send_signal(signal.SIGHUP)
b.start()
step()
stop_writer(a)
config(["b"], matcher="Type == 'line'")
proc.send_signal(signal.SIGHUP)
step()
config(["b"], matcher="Type == 'line'", broken=True)
proc.send_signal(signal.SIGHUP)
step()
config(["b"], matcher="Type == 'line'")
reload_cmd = subprocess.run([BIN, "-c", "conf.lua", "--reload"], cwd=DIR,
                            capture_output=True, text=True)
step()
stop_writer(b)
time.sleep(0.3)  # the metrics file's next writing
with open(os.path.join(DIR, "metrics.prom")) as f:
    metrics = f.read()
proc.send_signal(signal.SIGTERM)
try:
    status = proc.wait(timeout=30)
except subprocess.TimeoutExpired:
    proc.kill()
    status = proc.wait()
time.sleep(0.2)
sock.close()

# The output: every id of each input once, in order; the decoder's count
# going on where it was kept.
problems = []
seen = {"a": [], "b": []}
counts = {}
for line in out_lines():
    m = re.match(r"^(v\d) ([ab]) (\d+) (\d+)$", line)
    if not m:
        problems.append("a line not the decoder's: %r" % line)
        continue
    tag, name, ident, n = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
    seen[name].append(ident)
    counts.setdefault((tag, name), []).append(n)
for name, writer in (("a", a), ("b", b)):
    ids = seen[name]
    if ids != list(range(1, writer.written + 1)):
        missing = sorted(set(range(1, writer.written + 1)) - set(ids))
        doubled = len(ids) - len(set(ids))
        problems.append("input %s: %d lines written, %d delivered, %d missing (first %s), %d doubled, in order: %s"
                        % (name, writer.written, len(ids), len(missing), missing[:5], doubled,
                           ids == sorted(ids)))
# After the decoder became v2 it was never changed again: each input's
# instance counts 1, 2, 3... across the later reloads. (An instance per
# worker would count apart, but a file is read by one worker.)
for key, ns in counts.items():
    if key[0] == "v2" and ns != list(range(1, len(ns) + 1)):
        problems.append("decoder v2 for input %s restarted its count: %s..." % (key[1], ns[:3]))

reloads = {r: int(v) for r, v in re.findall(
    r'^lumberjit_config_reloads_total\{result="(\w+)"\} (\d+)$', metrics, re.M)}
print(json.dumps({
    "status": status,
    "written": {"a": a.written, "b": b.written},
    "v1_lines": len(counts.get(("v1", "a"), [])),
    "v2_lines": sum(len(v) for k, v in counts.items() if k[0] == "v2"),
    "notices": notices,
    "reloads": reloads,
    "last_reload_successful": re.findall(r"^lumberjit_config_last_reload_successful (\S+)$", metrics, re.M),
    "reload_command": {"status": reload_cmd.returncode, "stdout": reload_cmd.stdout,
                       "stderr": reload_cmd.stderr},
    "problems": problems,
}))
