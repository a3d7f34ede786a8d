#!/usr/bin/env python3
"""make_corpus.py - writes the seed corpora of fuzz/corpus/TARGET/ (run from
the repository's root; the regression inputs, regress-*, are kept as they
are). Seeds come from the specs' cases, RFC 5424/3164/6587 examples and the
lines bench/lib/gen_lines.py writes (w3 syslog, nginx)."""
import os, struct, subprocess, sys, tempfile

root = os.getcwd()
out = os.path.join(root, "fuzz", "corpus")

def gen(kind, n):
    with tempfile.NamedTemporaryFile() as f:
        subprocess.run([sys.executable, "bench/lib/gen_lines.py", kind, str(n),
                        f.name], check=True, stdout=subprocess.DEVNULL)
        return open(f.name, "rb").read()

def write(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)

w3 = gen("w3", 4)
nginx = gen("nginx", 3)
rfc5424 = (b'<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - '
           b'ID47 [exampleSDID@32473 iut="3" eventSource="Application" '
           b'eventID="1011"] An application event log entry')
rfc3164 = b"<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8"

def octets(msgs):
    return b"".join(b"%d %s" % (len(m), m) for m in msgs)

# frame: [framing|keep_cr] [max] [seed 2] stream
frames = {
    "octet": (0, 60, octets([rfc5424, rfc3164, b"<13>a b c:d\n"])),
    "octet_max": (1, 250, octets(w3.splitlines())),
    "lines": (2, 30, w3.replace(b"\n", b"\r\n")),
    "auto_lines": (0, 39, nginx),
    "garbage": (1, 20, b"12x <13>a\n4 <1>b<1>c\n1234567890 x\n3 <1>10 <13>ab"),
    "spec_pieces": (0, 3, b"abcd\nabcdefghij\n6 abcd\r\n"),
    "cut_short": (4, 10, b"11 <13>a b c:d4 <1>x\n12 <13>e\nf g h "),
}
for name, (mode, mx, data) in frames.items():
    write("fuzz_frame", name, bytes([mode, mx, 0x12, 0x34]) + data)

# lines: [keep_cr|is_offset] [max] [seed 2] bytes
lines = {
    "w3": (2, 250, w3), "nginx_crlf": (0, 39, nginx.replace(b"\n", b"\r\n")),
    "short_max": (3, 4, b"abcd\r\nabcd\rx\n\r\n\nlast\r"),
    "empty_lines": (0, 10, b"\n\n\r\n\r\r\n"),
}
for name, (flags, mx, data) in lines.items():
    write("fuzz_lines", name, bytes([flags, mx, 0x56, 0x78]) + data)

# join: [mode] [max_lines] [max_bytes] pattern NUL lines
write("fuzz_join", "start", b"\x00\x0f\xff^%d%d%d%d%-%d%d\x00"
      b"2026-05-19 boom\n  at a.b(c.java:1)\n  at d\n2026-05-19 ok\n")
write("fuzz_join", "continue", b"\x01\x0f\xff^%s\x00"
      b"Traceback:\n  File x\n  File y\nValueError\n")
write("fuzz_join", "cri", b"\x02\x0f\xff"
      b"2026-05-19T10:00:00Z stdout P part one \n"
      b"2026-05-19T10:00:00Z stderr F whole other\n"
      b"2026-05-19T10:00:01Z stdout F and two\n"
      b"2026-05-19T10:00:02Z stdout F one line\n")
write("fuzz_join", "docker", b"\x03\x0f\xff"
      b'{"log":"part one ","stream":"stdout","time":"2026-05-19T10:00:00Z"}\n'
      b'{"log":"two \\"q\\"\\n","stream":"stdout","time":"2026-05-19T10:00:00Z"}\n'
      b'{"log":"whole\\n","stream":"stderr","time":"2026-05-19T10:00:01Z"}\n')

# A message (fuzz_msg.h): flags, headers, then fields.
def msg(payload=b"", host=b"web-1", fields=()):
    b = bytes([0xff]) + struct.pack(">q", 1779184217000000000)
    b += struct.pack(">q", 6) + struct.pack(">q", 4242)
    b += bytes([len(payload)]) + payload + bytes([len(host)]) + host
    b += b"\x06syslog\x06logger\x01\x31"
    for name, t, values in fields:
        b += bytes([len(name)]) + name + bytes([t])
        for v in values:
            b += v
    return b

def s(x):
    return bytes([len(x)]) + x

fields = [(b"status", 0, [s(b"ok")]), (b"bytes", 1, [s(b"\xff\xfe ok")]),
          (b"code", 2, [struct.pack(">q", -404)]),
          (b"ms", 3, [struct.pack(">d", 12.5)]), (b"hit", 4, [b"\x01"]),
          (b"type", 0, [s(b"shadowed")]),
          (b"tags", 0x80 | (2 << 3), [s(b"a"), s(b"b"), s(b"c")])]
m = msg(b"GET /x \xe9t\xc3\xa9 \"q\"\t\\", fields=fields)
write("fuzz_json", "message", m)
write("fuzz_json", "nan", msg(b"", fields=[(b"x", 3, [b"\x7f\xf8" + b"\0" * 6])]))
exprs = [b'Type == "syslog" && Severity < 7',
         b'Fields[status] == "ok" || Fields[code] >= -500',
         b"Payload =~ /^GET \\// && Hostname != ''",
         b"(Fields[tags][0][2] == 'c' || FALSE) && Fields[missing] == NIL",
         b'Timestamp > 1779184217000000000 && Pid == 4242 && Uuid == ""',
         b"Logger !~ /x+/ && Fields[hit] == TRUE && Fields[ms] < 1.5e1"]
for i, e in enumerate(exprs):
    write("fuzz_matcher", "expr%d" % i, e + b"\0" + m)
templates = [b"logs-%{Type}", b"%{Hostname}/%{Fields[status]}/%{code}",
             b"%{Timestamp}-%{Severity}-%{Pid}-%{Uuid}-%{hit}-%{ms}", b"static"]
for i, t in enumerate(templates):
    write("fuzz_record_template", "t%d" % i, t + b"\0" + m)

# pattern: [init] pattern NUL subject
for i, (p, subj) in enumerate([(b"%s*(%S+)%s*=%s*(%S+)", b" k = v ; x=y"),
                               (b"^(%d+)-(%d+)", b"2026-05-19"),
                               (b"%b()%f[%w]", b"f(a(b)c)d"),
                               (b"[^%s]+", b"a b\0c"), (b"(a*(.))%1", b"aab")]):
    write("fuzz_pattern", "p%d" % i, bytes([3]) + p + b"\0" + subj)

# disk queue: [segment size] [records] records, then damage ops
recs = [w3.splitlines()[i][:60] for i in range(4)]
dq = bytes([2, len(recs)]) + b"".join(bytes([len(r)]) + r for r in recs)
write("fuzz_disk_queue", "intact", dq)
write("fuzz_disk_queue", "torn", dq + b"\x01\x00\x00\x30")
write("fuzz_disk_queue", "flipped", dq + b"\x20\x00\x00\x14\x00\x01\x00\x0a")
write("fuzz_disk_queue", "cursor", dq + b"\x03\x00\x00\x00"
      b"lumberjit disk queue cursor 1\nsegment 1\noffset 8\n")

# checkpoint: [flags] (flag 1: a valid block for the target's own file,
# then its fingerprint length, hash and offset) then the file's bytes
write("fuzz_checkpoint", "valid_block", b"\x01\x10" + b"\x00" * 8 +
      b"\x40\x01\x00\x00\x00\x00\x00\x00" + b"window 120 16 1234abcd\n")
write("fuzz_checkpoint", "two_blocks", b"\x00lumberjit checkpoint 2\n"
      b"input a\nfile /nonexistent/x.log\ndevice 1\ninode 2\n"
      b"fingerprint 0 cbf29ce484222325\noffset 5\nwindow 10 4 abc\n"
      b"input b\nfile relative.log\ndevice 3\ninode 4\n"
      b"fingerprint 64 0\noffset 99\n")
write("fuzz_checkpoint", "not_ours", b"\x00lumberjit checkpoint 1\n")
write("fuzz_checkpoint", "known_lines", b"\x00lumberjit checkpoint 4\n"
      b"known in 0123456789abcdef\nknown other 0\ninput a\nfile x.log\n"
      b"device 1\ninode 2\nfingerprint 0 cbf29ce484222325\noffset 5\n"
      b"check 0\nend 1\n")

# tls: [op] [flight] [offset] [seed] then bytes G (fuzz_tls.c): G alone to
# a server or a client, or spliced into one flight of a real handshake.
write("fuzz_tls", "handshake", b"\x02\x00\x00\x01")
write("fuzz_tls", "plain", b"\x00\x00\x00\x05GET / HTTP/1.0\r\n\r\n")
write("fuzz_tls", "syslog", b"\x00\x00\x00\x09" + rfc5424 + b"\n")
write("fuzz_tls", "client_alert", b"\x01\x00\x00\x03\x16\x03\x03\x00\x02\x02\x28")
for f in range(4):
    write("fuzz_tls", "insert_flight%d" % f, bytes([2, f, 5, 7]) + b"\x16\x03\x03")
    write("fuzz_tls", "server_flight%d" % f, bytes([6, f, 9, 3, 1]))
    write("fuzz_tls", "xor_flight%d" % f, bytes([10, f, 0x20, 3, 0x80]))

# config_keys: the examples, and snippets of the specs' configurations
# (a NUL splits two files of one configuration directory).
for name in sorted(os.listdir("examples")):
    if name.endswith(".lua"):
        write("fuzz_config_keys", "example-" + name[:-3],
              open(os.path.join("examples", name), "rb").read())
snippets = {
    "syslog_inputs": b'tcp = { type = "syslog_input", address = "tcp://127.0.0.1:0", '
        b'decoder = "rfc3164", max_connections_per_address = 5, '
        b'first_message_timeout_ms = 600 }\n'
        b'udp = { type = "syslog_input", address = "udp://[::1]:514", framing = "octet_counted" }\n'
        b'unix = { type = "syslog_input", address = "unix:///tmp/x.sock", max_line = 100 }\n'
        b'tls = { type = "syslog_input", address = "tls://0.0.0.0:6514", tls_cert = "c.pem", '
        b'tls_key = "k.pem", tls_handshake_timeout_ms = 200 }\n'
        b'rfc3164 = { type = "decoder", filename = "decoders/syslog.lua" }\n'
        b'out = { type = "stdout_output", message_matcher = "TRUE" }\n',
    "files": b'lumberjit = { state_dir = "state", checkpoint_interval_ms = 100, '
        b'workers = 2, memory_budget = "64MiB", log_level = "debug" }\n'
        b'app = { type = "tail_input", paths = { "/var/log/[a-z]*.log" }, '
        b'exclude = { "*.gz" }, max_line = 4096, long_lines = "split", keep_cr = true }\n'
        b'f = { type = "file_output", path = "out.log", encoder = "json", '
        b'message_matcher = "Type == \'syslog\' && Severity < 4", flush_bytes = 0, '
        b'disk_buffer = { path = "q", max_bytes = 1048576 } }\n'
        b'json = { type = "encoder", filename = "encoders/json.lua", instruction_limit = 1000 }\n',
    "kafka_filter": b'gen = { type = "generator_input", rate = 10, count = 100 }\n'
        b'k = { type = "kafka_output", brokers = "a:9092,b:9092", topic = "logs-%{Type}", '
        b'message_matcher = "Fields[x] != NIL" }\n'
        b'f = { type = "filter", filename = "filters/count.lua", mode = "tap", '
        b'ticker_interval_ms = 1000, message_matcher = "TRUE" }\n',
    "syslog_output": b's = { type = "syslog_output", address = "tcp://127.0.0.1:514", '
        b'framing = "octet_counted", message_matcher = "TRUE" }\n'
        b'i = { type = "stdin_input", decoder = "d" }\n'
        b'd = { type = "decoder", filename = "decoders/rsyslog.lua", '
        b'template = "RSYSLOG_FileFormat", tz = "+08:00", memory_limit = "1MiB" }\n',
    "two_files": b'i = { type = "stdin_input" }\n\0'
        b'o = { type = "stdout_output", message_matcher = "TRUE" }\n'
        b'lumberjit = { dead_letter_path = "dl.log" }\n',
    "code": b'local t = {}\nfor i = 1, 3 do t[i] = string.rep("x", i) end\n'
        b'o = setmetatable({ type = "stdout_output" }, { __index = function() error("x") end })\n'
        b'i = { type = "stdin_input", max_line = 2^53 }\n',
}
for name, text in snippets.items():
    write("fuzz_config_keys", name, text)

# rsyslog_template: [tz|message_type] template NUL records, LF-separated.
rs_lines = b"\n".join([rfc3164, rfc5424, w3.splitlines()[0], b"garbage",
                       b"<13>Nov 26 23:00:00 spec app: hello"])
rs_templates = {
    "traditional_file": b"RSYSLOG_TraditionalFileFormat",
    "file": b"RSYSLOG_FileFormat",
    "forward": b"RSYSLOG_TraditionalForwardFormat",
    "protocol23": b"RSYSLOG_SyslogProtocol23Format",
    "sysklogd": b"RSYSLOG_SysklogdFileFormat",
    "pri_text": b"<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\\n",
    "generated": b"%timegenerated:::date-rfc3339% %msg%",
    "literal": b"<13>Nov 26 23:00:00 spec app: %msg%",
    "unknown": b"%nope%",
    "options": b"%timestamp:::date-mysql%|%pri-text%|%syslogfacility-text%"
               b"|%programname:1:8%|%procid%|%msg:R,ERE,0,DFLT:[a-z]+--end%|%msg:::json%",
    "fields": b"%hostname:F,44:2% %app-name% %msgid% %structured-data% %rawmsg%",
}
for i, (name, t) in enumerate(sorted(rs_templates.items())):
    write("fuzz_rsyslog_template", name, bytes([i & 15]) + t + b"\0" + rs_lines)

# inject: ops read by the decoder fuzz_inject.c writes (see there),
# then NUL and records, LF-separated.
# A record: [safe] then ops (op % 6: 0 header, 1-2 field, 3 inject, 4
# Fields replaced, 5 a reader called); values: [kind % 12] and its bytes.
def rec(b):
    return bytes([len(b)]) + b
hello = b"\x00\x05hello"                      # value: a 5-byte string
inj = [
    rec(b"\x00" + b"\x00\x02" + hello + b"\x01\x03key" + hello + b"\x03\x00"),
    rec(b"\x01" + b"\x00\x05\x01\x90\x20" + b"\x00\x06\x02\x01" + b"\x00\x07\x01\x7a\x00"
        + b"\x01\x01n\x0a\x01\x20\x02\x01" + b"\x01\x01b\x0a\x00\x05xy\xffz\x01\x01"),
    rec(b"\x00" + b"\x00\x04\x04\x02\x30" + b"\x01\x01s\x04\x01\x09" + b"\x01\x01t\x04\xfb\x03"
        + b"\x02\x01a\x09\x03\x03\x01\x00\x01x\x02\x04" + b"\x03\x01"),
    rec(b"\x01" + b"\x05\x00\x05\x01\x03\x05\x01\x06\x02\x05\x02\x07\x01\x09"
        + b"\x05\x03\x08\x07 12345 abc=7,"),
    rec(b"\x00" + b"\x04\x00\x03abc" + b"\x04\x09\x02\x00\x01x\x03\x01") +
        rec(b"\x01\x01\x02kk\x09\x03\x00\x01a\x01\x05\x01\x03\x01\x03\x01"),
]
for i, r in enumerate(inj):
    write("fuzz_inject", "ops%d" % i, r)
write("fuzz_inject", "all", b"".join(inj))
