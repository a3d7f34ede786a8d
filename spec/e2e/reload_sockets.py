"""Senders across a reload, for reload_spec.lua.

  reload_sockets.py UDP_PORT TCP_PORT SECONDS RATE

Sends RATE datagrams a second to 127.0.0.1:UDP_PORT ("<13>u ID"), and, on
TCP_PORT, one short connection after another, each with ten LF-framed
messages ("<13>t ID") and a clean close, for SECONDS; meanwhile the spec
reloads lumberjit. Prints the ids it sent of each: every one must arrive,
as the sockets stay open through the reload and what is sent meanwhile
waits in the kernel's queues.
"""
import json
import socket
import sys
import time

udp_port, tcp_port, seconds, rate = (int(sys.argv[1]), int(sys.argv[2]),
                                     float(sys.argv[3]), int(sys.argv[4]))
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sent = {"u": 0, "t": 0}
start = time.monotonic()
while time.monotonic() - start < seconds:
    due = int((time.monotonic() - start) * rate)
    while sent["u"] < due:
        sent["u"] += 1
        udp.sendto(b"<13>u %d" % sent["u"], ("127.0.0.1", udp_port))
    conn = socket.create_connection(("127.0.0.1", tcp_port), timeout=10)
    batch = b"".join(b"<13>t %d\n" % (sent["t"] + i + 1) for i in range(10))
    conn.sendall(batch)
    conn.shutdown(socket.SHUT_WR)
    # The server closes once it read it all: a message it did not read
    # would be lost with an RST, and the spec would see it missing.
    conn.settimeout(10)
    while conn.recv(4096):
        pass
    conn.close()
    sent["t"] += 10
    time.sleep(0.005)
print(json.dumps(sent))
