-- Inputs, routing and outputs through the binary: pipes and files in,
-- matchers choosing outputs, files appended and reopened on SIGHUP.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

-- A decoder that tags each line with the Type given after a colon.
local tagger = [[
function process_message(line)
  local type, text = line:match("^(%w+):(.*)$")
  if not type then return -1, "no type prefix" end
  inject_message({Type = type, Payload = text, Fields = {length = #text}})
end
]]

local function sh(script)
  return tonumber(io.popen("bash -c " .. run.quote(script) .. "; echo $?"):read("*l"))
end

describe("inputs", function()
  it("numbers records from a pipe and offsets from a file", function()
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", [[
lumberjit = { dead_letter_path = "dead.log" }
stdin = { type = "stdin_input", decoder = "t" }
t = { type = "decoder", filename = "t.lua" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    run.write(dir .. "/t.lua", tagger)
    local status = sh(string.format("cd %s && printf 'a:one\\nbad\\nb:two' | %s -c config.lua > stdout 2> stderr",
      run.quote(dir), run.quote(run.bin)))
    assert.are.equal(0, status)
    assert.are.same({"one", "two"}, run.lines(run.read(dir .. "/stdout")))
    local dead = cjson.decode(run.read(dir .. "/dead.log"))
    assert.are.equal(2, dead.record)
    assert.are.equal("bad", dead.payload)
    assert.are.equal("rejected by t: no type prefix", dead.reason)
    run.cleanup(dir)
  end)

  it("reads a file input to its end, the last line without a newline too", function()
    local r = run.lumberjit{
      config = [[
file = { type = "file_input", path = "in.log" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]],
      files = {["in.log"] = "alpha\n\nbeta\r\ngamma"},
    }
    assert.are.equal(0, r.status)
    assert.are.equal("alpha\n\nbeta\ngamma\n", r.stdout) -- CRLF ends a line too
    run.cleanup(r.dir)
  end)

  it("fails clearly on a missing input file", function()
    local r = run.lumberjit{
      config = [[
file = { type = "file_input", path = "missing.log" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]],
    }
    assert.are.equal(1, r.status)
    assert.matches("input 'file': cannot open missing.log: No such file or directory", r.stderr)
    run.cleanup(r.dir)
  end)

  it("fails clearly on an output file it cannot open", function()
    local r = run.lumberjit{
      config = [[
stdin = { type = "stdin_input" }
out = { type = "file_output", path = "no/such/dir/out.log", message_matcher = "TRUE" }
]],
    }
    assert.are.equal(1, r.status)
    assert.matches("config.lua:2: output 'out': cannot open no/such/dir/out.log for appending", r.stderr)
    run.cleanup(r.dir)
  end)
end)

describe("bundled plugins", function()
  it("line decoder and payload encoder pass lines through, stamped and typed", function()
    local r = run.lumberjit{
      config = [[
stdin = { type = "stdin_input", decoder = "line" }
line = { type = "decoder", filename = "decoders/line.lua", message_type = "app", hostname = "h1" }
payload = { type = "encoder", filename = "encoders/payload.lua" }
json = { type = "encoder", filename = "encoders/json.lua" }
raw = { type = "file_output", path = "raw.log", encoder = "payload",
        message_matcher = "Type == 'app' && Hostname == 'h1'" }
doc = { type = "file_output", path = "doc.log", encoder = "json", message_matcher = "TRUE" }
]],
      input = "plain text\n\ttabbed \"quoted\"\n",
    }
    assert.are.equal(0, r.status)
    assert.are.equal("plain text\n\ttabbed \"quoted\"\n", run.read(r.dir .. "/raw.log"))
    local docs = run.lines(run.read(r.dir .. "/doc.log"))
    local second = cjson.decode(docs[2])
    assert.are.equal('\ttabbed "quoted"', second.message)
    assert.are.equal("app", second.type)
    assert.are.equal("h1", second.host)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ$", second["@timestamp"])
    run.cleanup(r.dir)
  end)
end)

describe("routing and outputs", function()
  it("sends each message to every output whose matcher it matches", function()
    local r = run.lumberjit{
      config = [[
lumberjit = { dead_letter_output = "errors" }
stdin = { type = "stdin_input", decoder = "t" }
t = { type = "decoder", filename = "t.lua" }
enc = { type = "encoder", filename = "enc.lua" }
web = { type = "file_output", path = "web.log", message_matcher = "Type == 'web'" }
long = { type = "file_output", path = "long.log", encoder = "enc",
         message_matcher = "Fields[length] > 5 && Type != 'skip'" }
errors = { type = "file_output", path = "errors.log", message_matcher = "FALSE" }
]],
      files = {
        ["t.lua"] = tagger,
        ["enc.lua"] = [[
function process_message()
  return read_message("Type") .. "=" .. read_message("Payload") .. " (" .. read_message("Fields[length]") .. ")"
end
]],
        ["web.log"] = "already here\n",
      },
      input = "web:GET /\nweb:GET /index.html\ndb:select 1\nnoprefix\nskip:long enough\n",
    }
    assert.are.equal(0, r.status)
    assert.are.same({"already here", "GET /", "GET /index.html"}, run.lines(run.read(r.dir .. "/web.log")))
    assert.are.same({"web=GET /index.html (15)", "db=select 1 (8)"}, run.lines(run.read(r.dir .. "/long.log")))
    local err = cjson.decode(run.read(r.dir .. "/errors.log"))
    assert.are.equal("noprefix", err.payload)
    assert.matches("1 messages matched no output", r.stderr)
    run.cleanup(r.dir)
  end)

  -- Runs lumberjit in dir with a FIFO as stdin that the shell script
  -- `steps` writes to through fd 3 (wait_for polls for a condition); the
  -- config copies stdin to out.log. Returns the exit status of the steps.
  local function with_fifo(dir, steps)
    run.write(dir .. "/config.lua", [[
stdin = { type = "stdin_input" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    return sh(string.format([[
cd %s && mkfifo in && { %s -c config.lua < in 2> stderr & pid=$!; }
exec 3> in
wait_for() { for i in $(seq 100); do eval "$1" && return 0; sleep 0.05; done; return 1; }
]], run.quote(dir), run.quote(run.bin)) .. steps)
  end

  -- SIGHUP reloads, which with an unchanged config reopens the files (as
  -- logrotate's postrotate asks); SIGUSR1 only reopens them.
  for sig, said in pairs{HUP = "the configuration is unchanged; reopening the output files",
                         USR1 = "SIGUSR1: reopening output files"} do
    it("reopens its file on SIG" .. sig, function()
      local dir = run.tmpdir()
      -- Feed one line, wait until it is written, rotate the file, signal,
      -- wait for the new file, feed another line.
      local status = with_fifo(dir, [[
echo before >&3
wait_for 'grep -q before out.log 2>/dev/null'
mv out.log out.log.1
kill -]] .. sig .. [[ $pid
wait_for '[ -e out.log ]'
echo after >&3
exec 3>&-
wait $pid
]])
      assert.are.equal(0, status)
      assert.are.equal("before\n", run.read(dir .. "/out.log.1"))
      assert.are.equal("after\n", run.read(dir .. "/out.log"))
      assert.truthy(run.read(dir .. "/stderr"):find(said, 1, true), run.read(dir .. "/stderr"))
      run.cleanup(dir)
    end)
  end

  it("stops cleanly on SIGTERM, writing out what it has", function()
    local dir = run.tmpdir()
    local status = with_fifo(dir, [[
echo one >&3
wait_for 'grep -q one out.log 2>/dev/null'
kill -TERM $pid
wait $pid
]])
    assert.are.equal(0, status)
    assert.are.equal("one\n", run.read(dir .. "/out.log"))
    assert.matches("SIGTERM: stopping", run.read(dir .. "/stderr"))
    assert.matches("input 'stdin': 1 records", run.read(dir .. "/stderr"))
    run.cleanup(dir)
  end)
end)
