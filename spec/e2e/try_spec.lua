-- `lumberjit -c CONFIG --try DECODER [--encode ENCODER] [--watch] [SAMPLE...]`,
-- the edit-test loop for people writing decoders, through the real binary:
-- each sample line's messages dumped on stdout, rejections and failures with
-- their reasons, the summary on stderr, the exit status, and --watch
-- running again whenever a file it depends on changes.
local run = dofile("spec/e2e/run.lua")

-- The Timestamp every spec decoder gives its messages (a message without
-- one would get the time it was made), and how the dump writes it.
local T = "1779186617000000000"
local TIMESTAMP = "  Timestamp: 2026-05-19T10:30:17.000000000Z (1779186617000000000)\n"

-- A configuration as a user's would be: an input and an output around the
-- plugins given (decoder `d` among them), which --try must load but not run.
local function config(plugins)
  return 'stdin = { type = "stdin_input", decoder = "d" }\n' .. plugins ..
    'out = { type = "stdout_output", message_matcher = "TRUE" }\n'
end

-- One message a line, its Payload the line in brackets (an empty string
-- header is no header at all: the brackets show an empty record); "reject"
-- is rejected.
local echo_decoder = [[
function process_message(line)
  if line == "reject" then return -1, "not for me" end
  inject_message({Timestamp = ]] .. T .. [[, Payload = "[" .. line .. "]"})
end
]]
local echo_config = config('d = { type = "decoder", filename = "d.lua" }\n')

-- What the echo decoder's message for `line` (as the dump writes it) dumps
-- as, at source:n.
local function echo(source, n, line)
  return string.format('%s:%d: 1 message\n%s  Payload: "[%s]"\n', source, n, TIMESTAMP, line)
end

local function sh(cmd)
  local ok = os.execute(cmd)
  return ok == true or ok == 0
end

-- A fresh directory holding files ({name = text}); the caller cleans it up.
local function make_dir(files)
  local dir = run.tmpdir()
  for name, text in pairs(files) do run.write(dir .. "/" .. name, text) end
  return dir
end

-- Runs `lumberjit ARGS` in dir (run.in_dir) with `stdin` (text; none:
-- /dev/null) on its standard input.
local function try(dir, args, stdin)
  local input
  if stdin then
    input = dir .. "/stdin.txt"
    run.write(input, stdin)
  end
  return run.in_dir(dir, args, input)
end

-- The configuration and samples in a fresh directory, run with args.
local function try_files(files, args, stdin)
  local dir = make_dir(files)
  local r = try(dir, args, stdin)
  run.cleanup(dir)
  return r
end

-- The summary of the last run on stderr, after "lumberjit: --try ".
local function summary(stderr)
  local last
  for s in (stderr or ""):gmatch("lumberjit: %-%-try ([^\n]*)") do last = s end
  return last
end

-- text with the magic characters of Lua patterns escaped.
local function literal(text)
  return (text:gsub("%p", "%%%0"))
end

-- Seconds since the epoch of a UTC date and time (days_from_civil, from
-- Howard Hinnant's date algorithms), as a string of digits.
local function utc_seconds(y, m, d, hh, mm, ss)
  local floor = math.floor
  if m <= 2 then y = y - 1 end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local doy = floor((153 * ((m + 9) % 12) + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  return string.format("%d", ((days * 24 + hh) * 60 + mm) * 60 + ss)
end

describe("lumberjit --try on the bundled syslog example", function()
  local config_path = run.root .. "/examples/stdin-syslog-json.lua"
  local sample = run.root .. "/examples/data/syslog.txt"

  -- Line 1's dump: "<44>May 19 18:30:17 snack jls: foo bar 32", the clock in
  -- Asia/Shanghai (UTC+8). The year is inferred from today's date, so it is
  -- read from the output and the nanoseconds computed for it.
  local function line1(stdout)
    local year = assert(stdout:match("\n  Timestamp: (%d%d%d%d)%-05%-19T"), stdout)
    local ns = utc_seconds(tonumber(year), 5, 19, 10, 30, 17) .. "000000000"
    return year, sample .. ":1: 1 message\n" ..
      "  Timestamp: " .. year .. "-05-19T10:30:17.000000000Z (" .. ns .. ")\n" ..
      '  Type: "syslog"\n' ..
      '  Hostname: "snack"\n' ..
      "  Severity: 4\n" ..
      '  Payload: "foo bar 32"\n' ..
      "  Fields:\n" ..
      -- The decoder gives pri and syslogfacility as Lua numbers: doubles.
      "    pri: 44.0\n" ..
      '    programname: "jls"\n' ..
      "    syslogfacility: 5.0\n" ..
      '    syslogtag: "jls:"\n'
  end

  -- The "SOURCE:LINE: ..." lines of stdout, in order.
  local function record_lines(stdout)
    local out = {}
    for _, line in ipairs(run.lines(stdout)) do
      if line:sub(1, #sample + 1) == sample .. ":" then out[#out + 1] = line end
    end
    return out
  end

  it("dumps each line's message, rejects the stranger and sums up", function()
    local dir = run.tmpdir()
    finally(function() run.cleanup(dir) end)
    local r = try(dir, string.format("-c %s --try rsyslog %s", run.quote(config_path), run.quote(sample)))
    assert.are.equal(1, r.status, r.stderr)
    local _, expected = line1(r.stdout)
    assert.are.equal(expected, r.stdout:sub(1, #expected))
    assert.are.equal(sample .. ":2: 1 message\n", r.stdout:sub(#expected + 1, #expected + #sample + 14))
    local records = record_lines(r.stdout)
    assert.are.equal(7, #records)
    for n, line in ipairs(records) do
      if n ~= 6 then assert.are.equal(sample .. ":" .. n .. ": 1 message", line) end
    end
    -- "this line was not written by rsyslog"
    assert.are.equal(sample .. ":6: rejected: ", records[6]:sub(1, #sample + 14))
    assert.truthy(records[6]:find("does not match the template", 1, true), records[6])
    assert.are.equal("rsyslog: 7 lines, 6 messages, 1 rejected, 0 failed", summary(r.stderr))
    -- The stdout_output (JSON) and the dead-letter file were not run.
    assert.is_nil(r.stdout:find("\n{", 1, true))
    assert.is_nil(run.read(dir .. "/syslog.dead-letter.log"))
  end)

  it("with --encode json, writes each message's JSON after its dump", function()
    local dir = run.tmpdir()
    finally(function() run.cleanup(dir) end)
    local r = try(dir, string.format("-c %s --try rsyslog --encode json %s",
      run.quote(config_path), run.quote(sample)))
    assert.are.equal(1, r.status, r.stderr)
    local year, expected = line1(r.stdout)
    expected = expected .. '  encoded: {"@timestamp":"' .. year .. '-05-19T10:30:17.000Z","@version":"1",' ..
      '"message":"foo bar 32","host":"snack","type":"syslog","severity":4,' ..
      '"pri":44,"programname":"jls","syslogfacility":5,"syslogtag":"jls:"}\n' ..
      sample .. ":2: 1 message\n"
    assert.are.equal(expected, r.stdout:sub(1, #expected))
    -- The rejected line has no message, so nothing encoded.
    assert.truthy(r.stdout:find("\n" .. literal(sample) .. ":6: rejected: [^\n]*\n" ..
      literal(sample) .. ":7: 1 message\n"), r.stdout)
    local encoded = 0
    for _, line in ipairs(run.lines(r.stdout)) do
      if line:find('^  encoded: {"@timestamp":') then encoded = encoded + 1 end
    end
    assert.are.equal(6, encoded)
    assert.are.equal("rsyslog: 7 lines, 6 messages, 1 rejected, 0 failed; " ..
      "encoder json: 6 encoded, 0 skipped, 0 rejected, 0 failed", summary(r.stderr))
  end)
end)

describe("lumberjit --try samples", function()
  it("reads the files and standard input in order, numbering lines per source", function()
    local r = try_files({["config.lua"] = echo_config, ["d.lua"] = echo_decoder,
                         ["a.txt"] = "a1\na2\n", ["b.txt"] = "b1\n"},
      "-c config.lua --try d a.txt - b.txt", "in1\nin2\n")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(echo("a.txt", 1, "a1") .. echo("a.txt", 2, "a2") .. echo("-", 1, "in1") ..
      echo("-", 2, "in2") .. echo("b.txt", 1, "b1"), r.stdout)
    assert.are.equal("d: 5 lines, 5 messages, 0 rejected, 0 failed", summary(r.stderr))
  end)

  it("reads standard input when no sample is named", function()
    local r = try_files({["config.lua"] = echo_config, ["d.lua"] = echo_decoder},
      "-c config.lua --try d", "first\nsecond\n")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(echo("-", 1, "first") .. echo("-", 2, "second"), r.stdout)
  end)

  it("takes an empty line as an empty record and a last line without a newline", function()
    -- "\r" is part of the line: only "\n" ends it.
    local r = try_files({["config.lua"] = echo_config, ["d.lua"] = echo_decoder,
                         ["s.txt"] = "one\n\ncrlf\r\nlast"},
      "-c config.lua --try d s.txt")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(echo("s.txt", 1, "one") .. echo("s.txt", 2, "") .. echo("s.txt", 3, "crlf\\r") ..
      echo("s.txt", 4, "last"), r.stdout)
    assert.are.equal("d: 4 lines, 4 messages, 0 rejected, 0 failed", summary(r.stderr))
  end)

  it("has no records in an empty sample", function()
    local r = try_files({["config.lua"] = echo_config, ["d.lua"] = echo_decoder, ["s.txt"] = ""},
      "-c config.lua --try d s.txt")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("", r.stdout)
    assert.are.equal("d: 0 lines, 0 messages, 0 rejected, 0 failed", summary(r.stderr))
  end)
end)

describe("lumberjit --try's dump", function()
  -- Makes the messages the sample line names.
  local dump_decoder = [[
local T = ]] .. T .. [[

local odd = "say \"hi\" C:\\dir\nnext\ttab\rcr\1bell\127del\255bad é ok " ..
  "\128 \226\130x \192\175 \237\160\128 \240\159\152\128 \0\27"
local cases = {
  none = function() end,
  two = function()
    inject_message({Timestamp = T, Type = "first"})
    inject_message({Timestamp = T, Type = "second", Fields = {n = {value = 7, value_type = 2}}})
  end,
  headers = function()
    inject_message({Timestamp = 1779186617000000512, Type = "t", Logger = "l", Hostname = "h",
      Severity = 7, Pid = 4211, Payload = "p", EnvVersion = "1.0",
      Uuid = string.char(0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                         0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10)})
  end,
  before1970 = function() inject_message({Timestamp = -1}) end,
  fields = function()
    inject_message({Timestamp = T, Fields = {
      a_string = "text",
      b_bytes = {value = "\0\255", value_type = 1},
      c_integer = {value = -44, value_type = 2},
      d_double = 3.5,
      e_integral = 3,
      f_negative = -0.25,
      g_seconds = 1779186617,
      h_inf = math.huge,
      i_ninf = -math.huge,
      j_nan = 0/0,
      k_true = true,
      l_false = false,
      m_strings = {"a", "b\"c"},
      n_integers = {value = {1, 2, 3}, value_type = 2},
      o_doubles = {1.5, 2},
      p_bools = {true, false},
      q_bytes = {value = {"x", "\1"}, value_type = 1},
      r_took = {value = 3, representation = "ms"},
      s_count = {value = 42, value_type = 2, representation = "count"},
    }})
  end,
  escapes = function()
    inject_message({Timestamp = T, Type = "tab\there", Payload = odd,
      Fields = {b = {value = odd, value_type = 1}, s = odd}})
  end,
}
function process_message(line) cases[line]() end
]]

  -- stdout of the dump decoder on a sample of the one line.
  local function dump_of(line)
    local r = try_files({["config.lua"] = echo_config, ["d.lua"] = dump_decoder, ["s.txt"] = line .. "\n"},
      "-c config.lua --try d s.txt")
    assert.are.equal(0, r.status, r.stderr)
    return r.stdout
  end

  it("counts the messages and numbers them when there are several", function()
    assert.are.equal("s.txt:1: 0 messages\n", dump_of("none"))
    assert.are.equal("s.txt:1: 2 messages\n" ..
      "  -- message 1 of 2\n" ..
      TIMESTAMP ..
      '  Type: "first"\n' ..
      "  -- message 2 of 2\n" ..
      TIMESTAMP ..
      '  Type: "second"\n' ..
      "  Fields:\n" ..
      "    n: 7\n", dump_of("two"))
  end)

  it("writes every header that is set, in order", function()
    assert.are.equal("s.txt:1: 1 message\n" ..
      "  Timestamp: 2026-05-19T10:30:17.000000512Z (1779186617000000512)\n" ..
      '  Type: "t"\n' ..
      '  Logger: "l"\n' ..
      '  Hostname: "h"\n' ..
      "  Severity: 7\n" ..
      "  Pid: 4211\n" ..
      '  Payload: "p"\n' ..
      '  EnvVersion: "1.0"\n' ..
      "  Uuid: 01234567-89ab-cdef-fedc-ba9876543210\n", dump_of("headers"))
    assert.are.equal("s.txt:1: 1 message\n" ..
      "  Timestamp: 1969-12-31T23:59:59.999999999Z (-1)\n", dump_of("before1970"))
  end)

  it("writes fields of every type, arrays and representations", function()
    assert.are.equal("s.txt:1: 1 message\n" .. TIMESTAMP .. [[
  Fields:
    a_string: "text"
    b_bytes: b"\x00\xff"
    c_integer: -44
    d_double: 3.5
    e_integral: 3.0
    f_negative: -0.25
    g_seconds: 1779186617.0
    h_inf: inf
    i_ninf: -inf
    j_nan: nan
    k_true: true
    l_false: false
    m_strings: ["a", "b\"c"]
    n_integers: [1, 2, 3]
    o_doubles: [1.5, 2.0]
    p_bools: [true, false]
    q_bytes: [b"x", b"\x01"]
    r_took: 3.0 (representation "ms")
    s_count: 42 (representation "count")
]], dump_of("fields"))
  end)

  it("escapes quotes, backslashes, control bytes and what is not UTF-8, and keeps UTF-8", function()
    local odd = [[say \"hi\" C:\\dir\nnext\ttab\rcr\x01bell\x7fdel\xffbad é ok ]] ..
      [[\x80 \xe2\x82x \xc0\xaf \xed\xa0\x80 😀 \x00\x1b]]
    assert.are.equal("s.txt:1: 1 message\n" .. TIMESTAMP ..
      '  Type: "tab\\there"\n' ..
      '  Payload: "' .. odd .. '"\n' ..
      "  Fields:\n" ..
      '    b: b"' .. odd .. '"\n' ..
      '    s: "' .. odd .. '"\n', dump_of("escapes"))
  end)
end)

describe("lumberjit --try rejections and failures", function()
  it("prints a rejected record's reason, an over-long one's too, and goes on", function()
    local r = try_files({
      ["config.lua"] = config('d = { type = "decoder", filename = "d.lua", input_limit = 16 }\n'),
      ["d.lua"] = echo_decoder,
      ["s.txt"] = "reject\nthis line is longer than sixteen bytes\nok\n"},
      "-c config.lua --try d s.txt")
    assert.are.equal(1, r.status, r.stderr)
    local lines = run.lines(r.stdout)
    assert.are.equal("s.txt:1: rejected: rejected by d: not for me", lines[1])
    assert.matches("^s%.txt:2: rejected: .", lines[2])
    assert.are.equal(echo("s.txt", 3, "ok"), table.concat(lines, "\n", 3) .. "\n")
    assert.are.equal("d: 3 lines, 1 message, 2 rejected, 0 failed", summary(r.stderr))
  end)

  -- Fails on "boom" (an error), "loop" (runs forever) and "hog" (allocates
  -- without bound).
  local failing_decoder = [[
function process_message(line)
  if line == "boom" then error("boom goes the decoder") end
  if line == "loop" then local n = 0 while true do n = n + 1 end end
  if line == "hog" then
    local t = {}
    while true do t[#t + 1] = string.rep("x", 65536) .. #t end
  end
  inject_message({Timestamp = ]] .. T .. [[, Payload = "[" .. line .. "]"})
end
]]

  it("prints a failed call's reason and decodes the next records, whatever max_failures", function()
    -- With the CPU limit off, only the instruction and memory limits can stop
    -- the loop and the hog, however fast the machine.
    local r = try_files({
      ["config.lua"] = config('d = { type = "decoder", filename = "d.lua", cpu_limit_ms = 0,\n' ..
        '      instruction_limit = 100000, max_failures = 1 }\n'),
      ["d.lua"] = failing_decoder,
      ["s.txt"] = "first\nboom\nloop\nhog\nboom\nlast\n"},
      "-c config.lua --try d s.txt")
    assert.are.equal(1, r.status, r.stderr)
    local lines = run.lines(r.stdout)
    assert.are.equal(echo("s.txt", 1, "first"), table.concat(lines, "\n", 1, 3) .. "\n")
    assert.matches("^s%.txt:2: failed: .*boom goes the decoder", lines[4])
    assert.matches("^s%.txt:3: failed: .*instruction limit exceeded", lines[5])
    assert.matches("^s%.txt:4: failed: .*memory limit exceeded", lines[6])
    assert.matches("^s%.txt:5: failed: .*boom goes the decoder", lines[7])
    assert.are.equal(echo("s.txt", 6, "last"), table.concat(lines, "\n", 8) .. "\n")
    assert.are.equal("d: 6 lines, 2 messages, 0 rejected, 4 failed", summary(r.stderr))
  end)

  -- Before: each failure also came as a log line on stderr, with the
  -- run's internals ("failure 2 of 1000000000 allowed in a row").
  it("prints a failure once, under its line", function()
    local r = try_files({["config.lua"] = echo_config, ["d.lua"] = failing_decoder,
                         ["s.txt"] = "boom\nboom\n"},
      "-c config.lua --try d s.txt")
    assert.are.equal(1, r.status)
    assert.is_nil(r.stderr:find("boom", 1, true), r.stderr)
    assert.is_nil(r.stderr:find("allowed in a row", 1, true), r.stderr)
    assert.are.equal(2, select(2, r.stdout:gsub("boom goes the decoder", "")))
  end)

  -- Before: "at driver:29", the sandbox's own code, for a runaway
  -- pattern in `return string.find(...)`.
  it("names the plugin's line where a limit stops it, never the sandbox's own code", function()
    local r = try_files({["config.lua"] = echo_config, ["d.lua"] = [[
local s = string.rep("a", 40)
function process_message(line)
  if line == "tail" then return string.find(s, string.rep("a-", 40) .. "b") end
  local found = string.find(s, string.rep("a-", 40) .. "b")
  return found and 0 or -1
end
]], ["s.txt"] = "call\ntail\n"}, "-c config.lua --try d s.txt")
    local lines = run.lines(r.stdout)
    assert.matches("^s%.txt:1: failed: cpu limit exceeded: .*, at %./d%.lua:4$", lines[1])
    assert.matches("^s%.txt:2: failed: cpu limit exceeded: .*, at a tail call of the plugin's", lines[2])
    assert.is_nil(r.stdout:find("driver", 1, true))
  end)

  it("stops a loop with the default CPU limit", function()
    local r = try_files({["config.lua"] = echo_config, ["d.lua"] = failing_decoder,
                         ["s.txt"] = "loop\nafter\n"},
      "-c config.lua --try d s.txt")
    assert.are.equal(1, r.status, r.stderr)
    local lines = run.lines(r.stdout)
    assert.matches("^s%.txt:1: failed: .*cpu limit exceeded", lines[1])
    assert.are.equal(echo("s.txt", 2, "after"), table.concat(lines, "\n", 2) .. "\n")
  end)

  it("prints an output limit's failure", function()
    local r = try_files({
      ["config.lua"] = config('d = { type = "decoder", filename = "d.lua", output_limit = 1024 }\n'),
      ["d.lua"] = 'function process_message(line) inject_message({Payload = string.rep(line, 1000)}) end\n',
      ["s.txt"] = "big\n"},
      "-c config.lua --try d s.txt")
    assert.are.equal(1, r.status, r.stderr)
    assert.matches("^s%.txt:1: failed: [^\n]*output limit exceeded[^\n]*\n$", r.stdout)
  end)

  it("shows what the plugin print()s under the line it ran for", function()
    local r = try_files({["config.lua"] = echo_config,
      ["d.lua"] = 'function process_message(line) print("decoding", line) end\n',
      ["s.txt"] = "x\ny\n"},
      "-c config.lua --try d s.txt")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("s.txt:1: 0 messages\n  print: decoding\tx\n" ..
                     "s.txt:2: 0 messages\n  print: decoding\ty\n", r.stdout)
  end)
end)

describe("lumberjit --try --encode", function()
  -- One message a word, the word its Type; the encoder skips "skip", rejects
  -- "reject", fails on "boom", prints on "again" and writes every other
  -- message's Payload.
  local files = {
    ["config.lua"] = config('d = { type = "decoder", filename = "d.lua" }\n' ..
                            'e = { type = "encoder", filename = "e.lua" }\n'),
    ["d.lua"] = [[
function process_message(line)
  for word in line:gmatch("%S+") do
    inject_message({Timestamp = ]] .. T .. [[, Type = word, Payload = "<" .. word .. ">"})
  end
end
]],
    ["e.lua"] = [[
function process_message()
  local t = read_message("Type")
  if t == "skip" then return -2 end
  if t == "reject" then return -1, "nope" end
  if t == "boom" then error("encoder boom") end
  if t == "again" then print("encoding", t) end
  return read_message("Payload") .. "\n"
end
]],
  }

  local function word(name)
    return TIMESTAMP .. '  Type: "' .. name .. '"\n  Payload: "<' .. name .. '>"\n'
  end

  it("prints what the encoder made, without its newline, and a skip, with status 0", function()
    files["s.txt"] = "keep skip\nagain\n"
    local r = try_files(files, "-c config.lua --try d --encode e s.txt")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("s.txt:1: 2 messages\n" ..
      "  -- message 1 of 2\n" .. word("keep") ..
      "  encoded: <keep>\n" ..
      "  -- message 2 of 2\n" .. word("skip") ..
      "  encoder skipped it\n" ..
      "s.txt:2: 1 message\n" .. word("again") ..
      "  encoder print: encoding\tagain\n" ..
      "  encoded: <again>\n", r.stdout)
    assert.are.equal("d: 2 lines, 3 messages, 0 rejected, 0 failed; " ..
      "encoder e: 2 encoded, 1 skipped, 0 rejected, 0 failed", summary(r.stderr))
  end)

  it("prints the encoder's rejections and failures, with status 1", function()
    files["s.txt"] = "reject boom keep\n"
    local r = try_files(files, "-c config.lua --try d --encode e s.txt")
    assert.are.equal(1, r.status, r.stderr)
    local lines = run.lines(r.stdout)
    assert.are.equal("s.txt:1: 3 messages\n" ..
      "  -- message 1 of 3\n" .. word("reject") ..
      "  encoder rejected it: rejected by e: nope\n" ..
      "  -- message 2 of 3\n" .. word("boom"),
      table.concat(lines, "\n", 1, 10) .. "\n")
    assert.matches("^  encoder failed: .*encoder boom", lines[11])
    assert.are.equal("  -- message 3 of 3\n" .. word("keep") .. "  encoded: <keep>\n",
      table.concat(lines, "\n", 12) .. "\n")
    assert.are.equal("d: 1 line, 3 messages, 0 rejected, 0 failed; " ..
      "encoder e: 1 encoded, 0 skipped, 1 rejected, 1 failed", summary(r.stderr))
  end)
end)

describe("lumberjit --try errors", function()
  local both = config('d = { type = "decoder", filename = "d.lua" }\n' ..
                      'e = { type = "encoder", filename = "e.lua" }\n')
  local files = {["config.lua"] = both, ["d.lua"] = echo_decoder,
                 ["e.lua"] = "function process_message() return 'x' end\n", ["s.txt"] = "x\n"}

  it("names an unknown decoder, or an encoder given as one", function()
    for _, name in ipairs({"nope", "e"}) do
      local r = try_files(files, "-c config.lua --try " .. name .. " s.txt")
      assert.are.equal(1, r.status)
      assert.truthy(r.stderr:find("lumberjit: --try: no decoder '" .. name .. "' in config.lua", 1, true),
        r.stderr)
      assert.are.equal("", r.stdout)
    end
  end)

  it("names an unknown encoder, or a decoder given as one", function()
    for _, name in ipairs({"nope", "d"}) do
      local r = try_files(files, "-c config.lua --try d --encode " .. name .. " s.txt")
      assert.are.equal(1, r.status)
      assert.truthy(r.stderr:find("lumberjit: --encode: no encoder '" .. name .. "' in config.lua", 1, true),
        r.stderr)
      assert.are.equal("", r.stdout)
    end
  end)

  it("names the config line, the plugin and the Lua error of a decoder that does not load", function()
    local r = try_files({["config.lua"] = echo_config, ["s.txt"] = "x\n",
      ["d.lua"] = "function process_message(line)\n  inject_message({Payload = line)\nend\n"},
      "-c config.lua --try d s.txt")
    assert.are.equal(1, r.status)
    assert.matches("config.lua:2: [^\n]*'d'[^\n]*d%.lua:2: '}' expected near '%)'", r.stderr)
  end)

  it("fails on a configuration error", function()
    local r = try_files({["config.lua"] = config('d = { type = "decoder", filename = "d.lua",\n' ..
      '      memroy_limit = 1 }\n'), ["d.lua"] = echo_decoder, ["s.txt"] = "x\n"},
      "-c config.lua --try d s.txt")
    assert.are.equal(1, r.status)
    assert.matches("config.lua:3: [^\n]*memroy_limit", r.stderr)
  end)

  it("names a sample that cannot be read", function()
    local r = try_files(files, "-c config.lua --try d s.txt missing.txt")
    assert.are.equal(1, r.status)
    assert.truthy(r.stderr:find("missing.txt", 1, true), r.stderr)
  end)

  it("is a usage error without -c, or with its options but no --try", function()
    for _, args in ipairs({"--try d s.txt", "-c config.lua --encode e", "-c config.lua --watch",
                           "-c config.lua s.txt", "-c config.lua --try"}) do
      local r = try_files(files, args)
      assert.are.equal(2, r.status, args)
      assert.are.equal("", r.stdout, args)
    end
  end)
end)

describe("lumberjit --try with a configuration's inputs and outputs", function()
  it("runs none of them: reads only the samples, writes only stdout and stderr", function()
    -- Opening the FIFO would block (a hang, killed by the guard); the
    -- rejected record would go to dl.log in a normal run.
    local dir = make_dir({["config.lua"] = [[
lumberjit = { dead_letter_path = "dl.log" }
fifo = { type = "file_input", path = "fifo", decoder = "d" }
stdin = { type = "stdin_input", decoder = "d" }
d = { type = "decoder", filename = "d.lua" }
out = { type = "file_output", path = "out.json", message_matcher = "TRUE" }
]], ["d.lua"] = echo_decoder, ["s.txt"] = "reject\nkept\n"})
    finally(function() run.cleanup(dir) end)
    assert.is_true(sh("mkfifo " .. run.quote(dir .. "/fifo")))
    local r = try(dir, "-c config.lua --try d s.txt", "from stdin\n")
    assert.are.equal(1, r.status, r.stderr)
    -- Only the sample's records: stdin was not read. (The reason's wording
    -- is checked with the rejections.)
    assert.matches("^s%.txt:1: rejected: [^\n]*not for me\n", r.stdout)
    assert.are.equal(echo("s.txt", 2, "kept"), (r.stdout:gsub("^[^\n]*\n", "")))
    assert.is_nil(run.read(dir .. "/out.json"))
    assert.is_nil(run.read(dir .. "/dl.log"))
  end)
end)

describe("lumberjit --try with a configuration of plugins alone", function()
  it("needs no input or output, which a run needs", function()
    local files = {["config.lua"] = 'd = { type = "decoder", filename = "d.lua" }\n',
                   ["d.lua"] = echo_decoder, ["s.txt"] = "alone\n"}
    local r = try_files(files, "-c config.lua --try d s.txt")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(echo("s.txt", 1, "alone"), r.stdout)
    r = try_files(files, "-c config.lua")
    assert.are.equal(1, r.status)
    assert.matches("defines no input", r.stderr)
  end)
end)

describe("lumberjit --try --watch", function()
  -- Starts `lumberjit ARGS` in dir in the background, its stdin fed from
  -- dir/stdin.txt through a pipe (readable once), stdout and stderr to
  -- files; returns its PID. The shell that started it waits for it and
  -- writes its exit status to dir/status. Job control (bash's set -m) keeps
  -- SIGINT from being ignored, as it would be for a plain background job.
  local function spawn(dir, args)
    local script = string.format("cd %s && (set -m; cat stdin.txt | %s %s > stdout 2> stderr & " ..
      "echo $! > pid; wait $!; echo $? > status) > /dev/null 2>&1 &", run.quote(dir), run.quote(run.bin), args)
    assert.is_true(sh("bash -c " .. run.quote("set -m; " .. script)))
    local pid
    for _ = 1, 100 do
      pid = tonumber(run.read(dir .. "/pid") or "")
      if pid then return pid end
      sh("sleep 0.1")
    end
    error("no pid for lumberjit")
  end

  -- Polls until check() is true, up to about 20 s (a guard against a hang,
  -- not a timing); fails with what the process wrote if it never is.
  local function wait_for(dir, what, check)
    for _ = 1, 200 do
      if check() then return end
      sh("sleep 0.1")
    end
    error("never " .. what .. "\nstdout:\n" .. (run.read(dir .. "/stdout") or "") ..
      "\nstderr:\n" .. (run.read(dir .. "/stderr") or ""))
  end

  -- The output of watch run k: the PATH its "== run K: PATH changed ==" line
  -- names and what follows it, up to the next run's line.
  local function watch_run(dir, k)
    local stdout = run.read(dir .. "/stdout") or ""
    local path, body = stdout:match("== run " .. k .. ": ([^\n]*) changed ==\n(.*)$")
    if body then body = body:match("^(.-)== run ") or body end
    return path, body
  end

  -- Replaces a file the way editors save: a new file renamed over the old,
  -- so that the watcher sees the old content or the new, never half of it.
  local function replace(path, text)
    run.write(path .. ".new", text)
    assert(os.rename(path .. ".new", path))
  end

  local function alive(pid)
    return sh("kill -0 " .. pid .. " 2> /dev/null")
  end

  -- The PID's exit status once the shell waiting for it has written it.
  local function exit_status(dir, pid)
    wait_for(dir, "exited", function() return run.read(dir .. "/status") ~= nil end)
    assert.is_false(alive(pid))
    return tonumber(run.read(dir .. "/status"))
  end

  -- Kills the process (by its PID) if a spec left it running, and cleans up.
  local function stop(dir, pid)
    if pid and not run.read(dir .. "/status") and alive(pid) then sh("kill -KILL " .. pid) end
    run.cleanup(dir)
  end

  local function decoder_of_type(type)
    return "function process_message(line)\n  inject_message({Timestamp = " .. T ..
      ", Type = " .. string.format("%q", type) .. ", Payload = line})\nend\n"
  end

  local function message(source, n, type, payload)
    return string.format('%s:%d: 1 message\n%s  Type: "%s"\n  Payload: "%s"\n',
      source, n, TIMESTAMP, type, payload)
  end

  it("runs again when the decoder changes, survives a broken one and ends on SIGTERM", function()
    local dir = make_dir({["config.lua"] = echo_config, ["d.lua"] = decoder_of_type("v1"),
                          ["s.txt"] = "hello\n", ["stdin.txt"] = ""})
    local pid
    finally(function() stop(dir, pid) end)
    pid = spawn(dir, "-c config.lua --try d --watch s.txt")

    local first = message("s.txt", 1, "v1", "hello")
    wait_for(dir, "ran once", function() return run.read(dir .. "/stdout") == first end)

    replace(dir .. "/d.lua", decoder_of_type("version 2"))
    local second = message("s.txt", 1, "version 2", "hello")
    wait_for(dir, "ran version 2", function() return select(2, watch_run(dir, 2)) == second end)
    assert.matches("d%.lua$", (watch_run(dir, 2)))

    -- A syntax error is reported and the watch goes on.
    replace(dir .. "/d.lua", "function process_message(line)\n  inject_message({Payload = line)\nend\n")
    wait_for(dir, "reported the broken decoder", function()
      return (run.read(dir .. "/stderr") or ""):find("d.lua:2: '}' expected near ')'", 1, true) ~= nil
    end)
    assert.is_true(alive(pid))
    assert.is_nil(run.read(dir .. "/status"))

    -- The broken load was run 3; the fixed decoder is run 4.
    replace(dir .. "/d.lua", decoder_of_type("v4"))
    local fourth = message("s.txt", 1, "v4", "hello")
    wait_for(dir, "ran v4 as run 4", function() return select(2, watch_run(dir, 4)) == fourth end)
    assert.matches("d%.lua$", (watch_run(dir, 4)))

    assert.is_true(sh("kill -TERM " .. pid))
    assert.are.equal(0, exit_status(dir, pid))
  end)

  it("runs again when a sample or the config changes, keeps stdin and ends on SIGINT", function()
    local decoder = [[
local type = read_config("message_type")
function process_message(line)
  if line == "bad" then return -1, "bad line" end
  inject_message({Timestamp = ]] .. T .. [[, Type = type, Payload = line})
end
]]
    local function config_of_type(type)
      return config('d = { type = "decoder", filename = "d.lua", message_type = "' .. type .. '" }\n')
    end
    local dir = make_dir({["config.lua"] = config_of_type("config v1"), ["d.lua"] = decoder,
                          ["s.txt"] = "one\n", ["stdin.txt"] = "piped\n"})
    local pid
    finally(function() stop(dir, pid) end)
    pid = spawn(dir, "-c config.lua --try d --watch s.txt -")

    local first = message("s.txt", 1, "config v1", "one") .. message("-", 1, "config v1", "piped")
    wait_for(dir, "ran once", function() return run.read(dir .. "/stdout") == first end)

    -- A line appended to the sample, as a log grows; stdin, read once, is
    -- the same in every run.
    assert.is_true(sh("printf 'two\\n' >> " .. run.quote(dir .. "/s.txt")))
    local second = message("s.txt", 1, "config v1", "one") .. message("s.txt", 2, "config v1", "two") ..
      message("-", 1, "config v1", "piped")
    wait_for(dir, "ran the grown sample", function() return select(2, watch_run(dir, 2)) == second end)
    assert.matches("s%.txt$", (watch_run(dir, 2)))

    replace(dir .. "/config.lua", config_of_type("config version 3"))
    local third = message("s.txt", 1, "config version 3", "one") ..
      message("s.txt", 2, "config version 3", "two") .. message("-", 1, "config version 3", "piped")
    wait_for(dir, "ran the new config", function() return select(2, watch_run(dir, 3)) == third end)
    assert.matches("config%.lua$", (watch_run(dir, 3)))

    -- The last run has a rejected record: the exit status is 1.
    assert.is_true(sh("printf 'bad\\n' >> " .. run.quote(dir .. "/s.txt")))
    wait_for(dir, "ran the bad line", function()
      local _, body = watch_run(dir, 4)
      return body and body:find("\n%-:1: 1 message\n.*\n  Payload: \"piped\"\n$") ~= nil
    end)
    assert.matches("\ns%.txt:3: rejected: [^\n]*bad line\n", select(2, watch_run(dir, 4)))

    assert.is_true(sh("kill -INT " .. pid))
    assert.are.equal(1, exit_status(dir, pid))
  end)
end)
