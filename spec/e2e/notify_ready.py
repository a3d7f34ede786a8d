"""Waits for lumberjit's READY=1 on NOTIFY_SOCKET, for tail_harness.lua.

  notify_ready.py SOCKET READY_FILE SECONDS

binds a unix datagram socket at SOCKET (a path; an old one there is
removed), then reads the sd_notify messages sent to it until one says
READY=1: it then writes that message to READY_FILE (through a temporary
file and a rename, so a reader sees it whole) and exits 0. After SECONDS
without it, it exits 1 and writes nothing. The harness waits for SOCKET to
appear (the bind made it) before starting lumberjit with NOTIFY_SOCKET set,
and then for READY_FILE.
"""
import os
import socket
import sys
import time

path, ready_file, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    os.unlink(path)
except FileNotFoundError:
    pass
# Anyone may send, as to systemd's socket (a spec runs lumberjit as
# nobody); the mode is the socket's from its bind, so once it appears.
os.umask(0)
sock.bind(path)
deadline = time.monotonic() + seconds
while True:
    left = deadline - time.monotonic()
    if left <= 0:
        sys.exit(1)
    sock.settimeout(left)
    try:
        msg = sock.recv(4096).decode(errors="replace")
    except socket.timeout:
        sys.exit(1)
    if "READY=1" in msg.split("\n"):
        with open(ready_file + ".tmp", "w") as f:
            f.write(msg.replace("\n", "|") + "\n")
        os.rename(ready_file + ".tmp", ready_file)
        sys.exit(0)
