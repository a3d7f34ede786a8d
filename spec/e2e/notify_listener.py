"""systemd's end of sd_notify for systemd_spec.lua: a datagram socket that
lumberjit is told of by NOTIFY_SOCKET, the messages it sends printed one a
line (their own newlines as '|').

  notify_listener.py abstract|path WATCHDOG_PID DIR CMD...

runs CMD in DIR with NOTIFY_SOCKET (an abstract name, or a socket file in
DIR) and WATCHDOG_USEC=200000 (WATCHDOG_PID too unless it is '-'); once it
said READY=1 and then twice WATCHDOG=1 (or 3 s passed after READY=1), sends
it SIGTERM, reads until STOPPING=1 and its exit, and prints the messages
and then "exit N".
"""
import os
import signal
import socket
import subprocess
import sys
import time

mode, watchdog_pid, workdir, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
if mode == "abstract":
    name = "lumberjit-spec-%d" % os.getpid()
    sock.bind("\0" + name)
    address = "@" + name
else:
    address = os.path.join(workdir, "notify.sock")
    sock.bind(address)
env = dict(os.environ, NOTIFY_SOCKET=address, WATCHDOG_USEC="200000")
if watchdog_pid != "-":
    env["WATCHDOG_PID"] = watchdog_pid
proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
sock.settimeout(0.2)
messages, ready_at, terminated = [], None, False
deadline = time.time() + 30
while time.time() < deadline:
    try:
        msg = sock.recv(4096).decode()
        messages.append(msg.replace("\n", "|"))
    except socket.timeout:
        msg = None
    if msg and msg.startswith("READY=1"):
        ready_at = time.time()
    pings = sum(1 for m in messages if m == "WATCHDOG=1")
    if not terminated and ready_at and (pings >= 2 or time.time() > ready_at + 3):
        proc.send_signal(signal.SIGTERM)
        terminated = True
    if terminated and any(m.startswith("STOPPING=1") for m in messages) \
            and proc.poll() is not None:
        break
if proc.poll() is None:
    proc.kill()
for m in messages:
    print(m)
print("exit %d" % proc.wait())
