-- Nothing is lost: every record that goes in comes out exactly once, on the
-- output or on the dead-letter path, whatever the bytes.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

-- A deterministic mix of real syslog lines and junk: bad PRIs, binary and
-- invalid UTF-8, lines longer than max_line, empty lines.
local function records(n)
  local seed = 12345
  local function rand(m)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % m
  end
  local out = {}
  for i = 1, n do
    local kind = rand(6)
    local line
    if kind == 0 then
      line = string.format("<%d>Nov %2d %02d:%02d:%02d host%d app[%d]: event %d", rand(192),
        1 + rand(28), rand(24), rand(60), rand(60), rand(9), rand(99999), i)
    elseif kind == 1 then
      line = string.format("<%d>May 19 18:30:17 snack jls: foo bar %d", rand(1000), i)
    elseif kind == 2 then
      local bytes = {}
      for j = 1, rand(80) do
        local b = rand(256)
        if b == 10 then b = 11 end
        bytes[j] = string.char(b)
      end
      line = table.concat(bytes)
    elseif kind == 3 then
      line = string.rep("L", 100 + rand(300))
    elseif kind == 4 then
      line = ""
    else
      line = "<13>Nov 22 00:04:00 edge7 app: \255\254 not utf-8 " .. i
    end
    out[i] = line
  end
  return out
end

-- stdin -> rsyslog decoder -> JSON -> out.json; lines over 256 bytes are
-- cut into pieces, which go to dead.log.
local config = [[
lumberjit = { dead_letter_path = "dead.log" }
stdin = { type = "stdin_input", decoder = "rsyslog", max_line = 256 }
rsyslog = {
  type = "decoder",
  filename = "decoders/rsyslog.lua",
  template = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n",
  tz = "Asia/Shanghai",
}
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "file_output", path = "out.json", encoder = "json", message_matcher = "TRUE" }
]]

-- Lines over max_line (256) are cut into max_line pieces, each a dead
-- letter: how many lines that is, and how many pieces.
local function pieces_of(lines)
  local overlong, pieces = 0, 0
  for _, line in ipairs(lines) do
    if #line > 256 then
      overlong = overlong + 1
      pieces = pieces + math.ceil(#line / 256)
    end
  end
  return overlong, pieces
end

describe("record accounting", function()
  it("accounts for every record of a hostile mix exactly once", function()
    local lines = records(3000)
    local r = run.lumberjit{
      config = config,
      input = table.concat(lines, "\n") .. "\n",
    }
    assert.are.equal(0, r.status)
    local delivered = run.lines(run.read(r.dir .. "/out.json"))
    for _, doc in ipairs(delivered) do cjson.decode(doc) end  -- all valid JSON
    local dead, pieces = {}, 0
    for _, line in ipairs(run.lines(run.read(r.dir .. "/dead.log"))) do
      local d = cjson.decode(line)
      if d.stage == "input" then
        pieces = pieces + 1
        dead[d.offset] = "piece"
      else
        dead[#dead + 1] = d
      end
    end
    local overlong, expected_pieces = pieces_of(lines)
    assert.are.equal(expected_pieces, pieces)
    assert.are.equal(#lines - overlong, #delivered + #dead)
    -- Records: an overlong line is one, however many pieces it went in.
    assert.matches(string.format("input 'stdin': 3000 records %%(%d longer than max_line, 0 pieces truncated%%), "
      .. "%d dead%%-letter records %%(overlong ones in %d pieces%%)", overlong, overlong + #dead, pieces), r.stderr)
    run.cleanup(r.dir)
  end)

  -- Before: the unterminated line in the buffer at SIGTERM was dropped;
  -- then handed on as a record (torn); now it is a dead letter.
  it("accounts for every record when SIGTERM comes mid-line", function()
    local lines = records(3000)
    local dir = run.tmpdir()
    local input = table.concat(lines, "\n") .. "\n"
    run.write(dir .. "/input", input)
    run.write(dir .. "/config.lua", config)
    -- About 60,000 bytes arrive, cut in the middle of a line; then the stop.
    local cut = 60000
    while input:sub(cut, cut) == "\n" do cut = cut + 1 end
    local status = tonumber(io.popen("bash -c " .. run.quote("cd " .. dir .. "\n" .. [[
      mkfifo feed
      (head -c ]] .. cut .. [[ input; exec sleep 30) > feed & feeder=$!
      timeout --foreground -s KILL 30 ]] .. run.quote(run.bin) .. [[ -c config.lua < feed 2> stderr &
      pid=$!; sleep 1; kill -TERM $pid; wait $pid; echo $?; kill $feeder]])):read("*a"):match("(%d+)%s*$"))
    assert.are.equal(0, status)
    local got = input:sub(1, cut)
    assert.are_not.equal("\n", got:sub(-1)) -- cut in a line
    -- The cut line counts as a record, dead-lettered with what was read of it.
    local sent = run.lines(got .. "\n")
    local stderr = run.read(dir .. "/stderr")
    local records = tonumber(stderr:match("input 'stdin': (%d+) records"))
    assert.are.equal(#sent, records)
    local delivered = #run.lines(run.read(dir .. "/out.json"))
    local dead, pieces, cut_line = 0, 0, nil
    for _, line in ipairs(run.lines(run.read(dir .. "/dead.log"))) do
      local d = cjson.decode(line)
      if d.reason:find("stopped inside this line", 1, true) then cut_line = d.payload
      elseif d.stage == "input" then pieces = pieces + 1 else dead = dead + 1 end
    end
    assert.are.equal(sent[#sent], cut_line)
    local overlong, expected_pieces = pieces_of({unpack(sent, 1, #sent - 1)})
    assert.are.equal(expected_pieces, pieces)
    assert.are.equal(records - overlong, delivered + dead + 1)
    assert.matches(string.format("output 'out': %d delivered, 0 failed", delivered), stderr)
    run.cleanup(dir)
  end)
end)
