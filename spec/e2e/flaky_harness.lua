-- What the flaky-uplink specs share (flaky_uplink_spec.lua, flaky_kafka_spec.lua,
-- disk_buffer_full_spec.lua): the misbehaving proxy (flaky_proxy.py) between
-- lumberjit and its receiver, a generator whose records carry their number,
-- and the metrics file read while lumberjit runs.
--
--   local f = dofile("spec/e2e/flaky_harness.lua")
--   local p = f.proxy(dir, target_port, { seed = 7, chaos = 25 })  -- p.port, p.control
--   f.control(p, "mode blackhole")
--   f.chaos_seconds()                 -- FLAKY_SECONDS, else the default given
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local receiver = dofile("spec/e2e/syslog_receiver.lua")

local f = {}

-- How long the proxy misbehaves: FLAKY_SECONDS for a long run, else the
-- spec's default (CI runs every spec twice, normal and ASan, on a tight
-- budget).
function f.chaos_seconds(default)
  return tonumber(os.getenv("FLAKY_SECONDS") or "") or default
end

-- The proxy's seed: FLAKY_SEED to replay a run, else the time (printed,
-- so that a failure can be replayed).
function f.seed()
  local seed = tonumber(os.getenv("FLAKY_SEED") or "") or os.time() % 100000
  io.stderr:write("flaky proxy seed ", seed, " (FLAKY_SEED replays it)\n")
  return seed
end

-- Starts flaky_proxy.py in dir towards 127.0.0.1:target; opts = { port =
-- (default: a free one), seed =, chaos = seconds (0: pass until told),
-- limit = seconds before it is killed }. Returns { dir, port, control }.
function f.proxy(dir, target, opts)
  opts = opts or {}
  local port, control = run.free_ports(2)
  local p = { dir = dir, port = opts.port or port, control = control }
  h.spawn(dir, "proxy", string.format("python3 %s --listen %d --target %d --dir %s --control %d --seed %d --chaos %d",
    run.quote(run.root .. "/spec/e2e/flaky_proxy.py"), p.port, target, run.quote(dir), p.control,
    opts.seed or 1, opts.chaos or 0), opts.limit or 900)
  assert(h.wait_until(function() return (run.read(dir .. "/proxy.log") or ""):find("listening") end, 10),
    "the proxy did not start: " .. (run.read(dir .. "/proxy.err") or ""))
  return p
end

-- Sends a line to the proxy's control socket ("mode NAME", "heal").
function f.control(p, line)
  assert(h.sh(p.dir, string.format([[python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", %d))
s.sendall(sys.argv[1].encode() + b"\n")
assert s.makefile().readline() == "ok\n"' %s]], p.control, run.quote(line))), "the proxy refused " .. line)
end

function f.healed(p)
  return (run.read(p.dir .. "/proxy.log") or ""):find("healed") ~= nil
end

function f.stop_proxy(p)
  h.terminate(p.dir, "proxy", 5)
end

-- The proxy's figures: how many times it misbehaved, and how ("drop=3,
-- stall=2"), and the most bytes a second it forwarded towards the
-- receiver over any `window` seconds.
function f.proxy_figures(p, window)
  local modes, outages, text = {}, 0, {}
  for m in (run.read(p.dir .. "/proxy.log") or ""):gmatch("mode (%a+) %(seed") do
    modes[m] = (modes[m] or 0) + 1
    outages = outages + 1
  end
  for m, count in pairs(modes) do text[#text + 1] = m .. "=" .. count end
  local per_second = {}
  for up in (run.read(p.dir .. "/rates") or ""):gmatch("%d+ (%d+) %d+\n") do per_second[#per_second + 1] = tonumber(up) end
  local most = 0
  for i = 1, #per_second - window + 1 do
    local sum = 0
    for j = i, i + window - 1 do sum = sum + per_second[j] end
    most = math.max(most, sum)
  end
  return outages, table.concat(text, ","), most / window
end

-- An encoder that numbers its messages ("line N ", then the generator's
-- line): with one worker the encoder sees them in the order
-- they were read, so N is the record's number and every record can be
-- checked. `prefix` goes before it (a syslog header).
function f.numbering_encoder(dir, prefix)
  run.write(dir .. "/numbering.lua", string.format([[
local n = 0
function process_message()
  n = n + 1
  return %q .. "line " .. n .. " " .. (read_message("Payload") or "")
end
]], prefix or ""))
end

-- A config: the generator at `rate` lines a second (`count` in all, 0:
-- until stopped), one worker (so the numbering encoder numbers records in
-- their order), the metrics file every 200 ms, and `output` (a table's
-- text) named out.
function f.config(rate, output, count)
  return string.format([[
lumberjit = { dead_letter_path = "dead.log", state_dir = "state", stop_timeout_ms = 10000, workers = 1,
              metrics_path = "metrics.prom", metrics_interval_ms = 200 }
gen = { type = "generator_input", format = "syslog", rate = %d, count = %d }
numbering = { type = "encoder", filename = "numbering.lua" }
out = { message_matcher = "TRUE", encoder = "numbering", %s }
]], rate, count or 0, output)
end

-- Starts lumberjit on dir/config.lua, killed after `limit` seconds. Its
-- own PID goes to lumberjit.pid: a SIGTERM to the `timeout` around it
-- would reach it twice (timeout passes it on to its process group too),
-- and a second one stops it at once.
function f.start_lumberjit(dir, limit)
  h.spawn(dir, "wrapper", "sh -c 'echo $$ > lumberjit.pid; exec " .. run.quote(run.bin) .. " -c config.lua'", limit)
  assert(h.wait_until(function() return run.read(dir .. "/lumberjit.pid") end, 10))
end

-- Stops it with one SIGTERM; its exit status (nil if it did not end
-- within `seconds`) and its stderr.
function f.stop_lumberjit(dir, seconds)
  h.sh(dir, "kill -TERM $(cat lumberjit.pid)")
  local status = h.wait_exit(dir, "wrapper", seconds)
  if not status then h.sh(dir, "kill -KILL $(cat lumberjit.pid)") end
  return status, run.read(dir .. "/wrapper.err") or ""
end

-- The samples of `metric` (with the output's label) in the metrics file
-- now; nil when it has none.
function f.metric(dir, name)
  local text = run.read(dir .. "/metrics.prom") or ""
  local value = text:match("\n" .. name .. "{[^}]*} ([%d.e+]+)") or text:match("\n" .. name .. " ([%d.e+]+)")
  return tonumber(value)
end

-- Polls the metrics file every 0.2 s while `until_fn` is false (at most
-- `seconds`), keeping the largest value of each name in `names`. Returns
-- whether until_fn became true, and { name = largest }.
function f.watch(dir, names, until_fn, seconds)
  local most = {}
  local ok = h.wait_until(function()
    for _, name in ipairs(names) do
      local v = f.metric(dir, name)
      if v and (not most[name] or v > most[name]) then most[name] = v end
    end
    return until_fn()
  end, seconds)
  return ok, most
end

-- Waits while the proxy misbehaves (at most `seconds` and 30 more) and
-- then while the backlog drains (at most `drain` seconds): the disk buffer
-- empty, the queue below a second of the generator's `rate`. Returns
-- whether it drained and the most records the disk buffer held.
function f.ride_out(dir, p, seconds, drain, rate)
  local names = { "lumberjit_output_disk_buffer_records" }
  local healed, most = f.watch(dir, names, function() return f.healed(p) end, seconds + 30)
  assert(healed, run.read(p.dir .. "/proxy.log"))
  local drained = f.watch(dir, {}, function()
    return f.metric(dir, "lumberjit_output_disk_buffer_records") == 0
      and (f.metric(dir, "lumberjit_output_queued_records") or rate) < rate
  end, drain)
  return drained, most.lumberjit_output_disk_buffer_records or 0
end

-- dir/in.log: "line 1" .. "line N", what check-records.py expects of
-- out.log.
function f.expect(dir, n)
  assert(h.sh(dir, string.format([[python3 -c '
with open("in.log", "w") as f:
    f.write("".join("line %%d\n" %% i for i in range(1, %d + 1)))']], n)))
end

-- The numbers in dir/out.log's "line N" records, as a set.
function f.received(dir)
  local got = {}
  for n in (run.read(dir .. "/out.log") or ""):gmatch("line (%d+)") do got[tonumber(n)] = true end
  return got
end

-- Waits (at most `seconds`) until the receiver wrote `want` records, or
-- wrote none for 3 s: what lumberjit delivered may still be on its way,
-- in the proxy and the receiver.
function f.wait_arrivals(dir, want, seconds)
  local last, still = -1, 0
  h.wait_until(function()
    local got = receiver.received(dir)
    if got == last then still = still + 1 else still = 0 end
    last = got
    return got >= want or still >= 60
  end, seconds or 60)
end

-- How many lines lumberjit's stderr has.
function f.line_count(text)
  return select(2, text:gsub("\n", ""))
end

return f
