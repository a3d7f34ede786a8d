#!/usr/bin/env python3
"""Writers for the tailing benchmarks: each write(2) holds whole lines, as a
logger's does, so writers appending to one file never tear each other's
lines.

  append.py storm FILE LINE_BYTES COUNT
      appends COUNT copies of the W1 line (padded to LINE_BYTES, newline
      included) as fast as the disk takes them, 64 KiB per write.
  append.py paced DIR FILES BYTES_PER_S SECONDS
      appends nginx-style access lines (283 bytes, distinct path, client,
      size and time per line) round-robin to DIR/f0000.log ...; one burst
      every 10 ms, so the rate holds at BYTES_PER_S in all.
"""
import os
import sys
import time

W1 = ("2017-03-16T19:21:14+08:00 INFO Non-zero metrics in the last 30s: "
      "libbeat.publisher.published_events=2 registrar.states.update=3 "
      "libbeat.kafka.call_count.PublishEvents=2 publish.events=3 "
      "libbeat.kafka.published_and_acked_events=2 registrar.writes=2")


def storm(path, line_bytes, count):
    line = (W1 + " " + "x" * max(0, line_bytes - len(W1) - 2))[:line_bytes - 1] + "\n"
    per_write = max(1, 65536 // len(line))
    chunk = (line * per_write).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    left = count
    while left > 0:
        n = min(left, per_write)
        os.write(fd, chunk if n == per_write else (line * n).encode())
        left -= n
    os.close(fd)


def nginx_line(i):
    line = ('10.%d.%d.%d - - [23/Nov/2026:10:%02d:%02d +0000] "GET /api/v1/items/%d?page=%d HTTP/1.1" '
            '200 %d "https://example.com/list/%d" "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101"'
            % (i % 256, (i // 256) % 256, (i * 7) % 256, (i // 60) % 60, i % 60, i, i % 97,
               1000 + i % 9000, i % 1000))
    return line[:282].ljust(282) + "\n"


def paced(directory, files, bytes_per_s, seconds):
    fds = [os.open(os.path.join(directory, "f%04d.log" % k), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
           for k in range(files)]
    lines_per_tick = bytes_per_s / 283.0 / 100.0
    start = time.monotonic()
    due, written, tick = 0.0, 0, 0
    while time.monotonic() - start < seconds:
        tick += 1
        due += lines_per_tick
        while written < int(due):
            os.write(fds[written % files], nginx_line(written).encode())
            written += 1
        pause = start + tick * 0.01 - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    for fd in fds:
        os.close(fd)
    print(written)


if __name__ == "__main__":
    if sys.argv[1] == "storm":
        storm(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "paced":
        paced(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit(__doc__)
