-- W1's Kafka variant (shared/WORKLOADS.md), run by bench/w1-kafka: varied
-- 247-byte W1 lines from a file -> line decoder -> Logstash JSON encoder ->
-- kafka_output, against a real broker on 127.0.0.1 (spec/e2e/kafka_harness.lua),
-- with lz4, zstd and gzip; and kcat -P producing the same lines with the
-- same codec and acks to the same broker in the same run, alternating.
-- Prints records/s, MB/s (of input lines), CPU seconds, lumberjit's
-- delivery latency percentiles (produce to delivery report) and the ratio
-- to kcat's rate. Every run goes to a fresh topic, whose count is checked.
--
--   lua5.1 bench/lua/kafka.lua BIN N RUNS CODECS
local k = dofile("spec/e2e/kafka_harness.lua")
local run = dofile("spec/e2e/run.lua")

local bin, n, runs = arg[1], tonumber(arg[2]), tonumber(arg[3])
local codecs = {}
for c in arg[4]:gmatch("[^,]+") do codecs[#codecs + 1] = c end

local work = run.tmpdir()
local lines = work .. "/w1.log"
assert(os.execute(("python3 bench/lib/gen_lines.py w1 %d %s"):format(n, lines)) == 0)
local f = io.open(lines)
local bytes = f:seek("end")
f:close()

local function shell(cmd)
  local p = io.popen(cmd)
  local out = p:read("*a")
  p:close()
  return out
end

-- Runs cmd under GNU time: wall and CPU seconds.
local function timed(cmd, err)
  shell(("/usr/bin/time -f '%%e %%U %%S' -o %s/time sh -c %s 2> %s"):format(work, run.quote(cmd), err))
  local e, u, s = run.read(work .. "/time"):match("([%d.]+) ([%d.]+) ([%d.]+)")
  return tonumber(e), tonumber(u) + tonumber(s)
end

local function median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

local b = k.start()
local topics, serial = {}, 0
local function fresh_topic()
  serial = serial + 1
  return "bench-" .. serial
end
-- Topics are made up front: one JVM start for all.
for _ = 1, (#codecs * runs * 2) do topics[fresh_topic()] = 1 end
k.create_topics(b, topics)
serial = 0

local function lumberjit(codec, topic)
  run.write(work .. "/config.lua", ([[
lumberjit = { dead_letter_path = "%s/dead.log" }
file = { type = "file_input", path = "%s", decoder = "line" }
line = { type = "decoder", filename = "decoders/line.lua" }
json = { type = "encoder", filename = "encoders/json.lua" }
kafka = { type = "kafka_output", encoder = "json", message_matcher = "TRUE", brokers = "%s",
          topic = "%s", compression = "%s" }
]]):format(work, lines, b.bootstrap, topic, codec))
  local wall, cpu = timed(("%s -c %s/config.lua"):format(run.quote(bin), work), work .. "/lj.err")
  local err = run.read(work .. "/lj.err")
  local lat = { err:match("delivery latency p50 ([%d.]+) ms, p95 ([%d.]+) ms, p99 ([%d.]+) ms, p99.9 ([%d.]+) ms, max ([%d.]+) ms") }
  assert(#lat == 5, err)
  return wall, cpu, lat
end

local function kcat(codec, topic)
  return timed(("kcat -P -q -b %s -t %s -X compression.codec=%s -X acks=all -l %s"):format(
    b.bootstrap, topic, codec, lines), work .. "/kcat.err")
end

print(("W1 to Kafka: %d varied lines of ~247 B (%.1f MB), median of %d runs, broker on 127.0.0.1"):format(
  n, bytes / 1e6, runs))
print("lumberjit: file -> line decoder -> JSON encoder -> kafka_output (acks=all); kcat -P: the raw lines")
for _, codec in ipairs(codecs) do
  local lw, lc, kw, kc, lats = {}, {}, {}, {}, {}
  for _ = 1, runs do
    local t1, t2 = fresh_topic(), fresh_topic()
    local w, c, lat = lumberjit(codec, t1)
    lw[#lw + 1], lc[#lc + 1], lats[#lats + 1] = w, c, lat
    assert(k.count(b, t1) == n, "lumberjit: not every line arrived")
    w, c = kcat(codec, t2)
    kw[#kw + 1], kc[#kc + 1] = w, c
    assert(k.count(b, t2) == n, "kcat: not every line arrived")
  end
  local l_wall, k_wall = median(lw), median(kw)
  table.sort(lats, function(x, y) return tonumber(x[1]) < tonumber(y[1]) end)
  local lat = lats[math.floor((#lats + 1) / 2)]
  print(("%-6s lumberjit %8.0f records/s %6.1f MB/s %5.2f CPU-s | kcat %8.0f records/s %6.1f MB/s %5.2f CPU-s | ratio %.2f"):format(
    codec, n / l_wall, bytes / l_wall / 1e6, median(lc), n / k_wall, bytes / k_wall / 1e6, median(kc),
    k_wall / l_wall))
  print(("       lumberjit delivery latency: p50 %s ms, p95 %s ms, p99 %s ms, p99.9 %s ms, max %s ms"):format(
    lat[1], lat[2], lat[3], lat[4], lat[5]))
end
k.destroy(b)
run.cleanup(work)
