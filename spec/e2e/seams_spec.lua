-- The smaller seams of issue 22: one line-ending rule for every input,
-- --check refusing what would fail or misbehave at run time, a state_dir
-- made on first use, and the descriptor budget said at start.
local run = dofile("spec/e2e/run.lua")

local function stdin_config(extra)
  return [[
lumberjit = { dead_letter_path = "dl.log" }
i = { type = "stdin_input"]] .. (extra or "") .. [[ }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]]
end

describe("line endings", function()
  it("drop the CR of a CRLF ending from stdin lines, and keep a CR inside a line", function()
    local r = run.lumberjit{config = stdin_config(), input = "crlf line\r\nbare\rcr\r\nlast\r\nno newline\r"}
    assert.are.equal(0, r.status)
    assert.are.equal("crlf line\nbare\rcr\nlast\nno newline\n", run.read(r.dir .. "/out.log"))
    run.cleanup(r.dir)
  end)

  it("drop it from a file's lines, also from a line split across reads and pieces of a long one", function()
    local dir = run.tmpdir()
    local long = string.rep("x", 40)
    run.write(dir .. "/in.txt", "a\r\n" .. long .. "\r\n" .. string.rep("y", 2000000) .. "\r\nend\r\n")
    run.write(dir .. "/config.lua", [[
lumberjit = { dead_letter_path = "dl.log" }
i = { type = "file_input", path = "in.txt", max_line = 32, long_lines = "split" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    assert.are.equal(0, run.in_dir(dir, "-c config.lua").status)
    local out = run.read(dir .. "/out.log")
    assert.is_nil(out:find("\r", 1, true))
    -- Every byte but the CRs, in pieces of 32 at most.
    assert.are.equal(1 + 40 + 2000000 + 3, #out:gsub("\n", ""))
    assert.are.same({"a", string.rep("x", 32), string.rep("x", 8)}, {unpack(run.lines(out), 1, 3)})
    assert.are.equal("end", run.lines(out)[#run.lines(out)])
    run.cleanup(dir)
  end)

  it("keep the CR with keep_cr = true", function()
    local r = run.lumberjit{config = stdin_config(", keep_cr = true"), input = "crlf line\r\nlast\r"}
    assert.are.equal(0, r.status)
    assert.are.equal("crlf line\r\nlast\r\n", run.read(r.dir .. "/out.log"))
    run.cleanup(r.dir)
  end)
end)

describe("--check", function()
  it("refuses two stdin_inputs", function()
    local r = run.lumberjit{args = "--check", config = stdin_config() .. 'j = { type = "stdin_input" }\n'}
    assert.are.equal(1, r.status)
    assert.matches("config.lua:4: input 'j': standard input is read by input 'i' already", r.stderr)
    run.cleanup(r.dir)
  end)

  it("refuses two writers of one file, by any name, made yet or not", function()
    local two = stdin_config() .. 'out2 = { type = "file_output", path = "./out.log", message_matcher = "TRUE" }\n'
    local r = run.lumberjit{args = "--check", config = two}
    assert.are.equal(1, r.status)
    assert.matches("output 'out' and output 'out2' write one file %('out.log' and './out.log'%)", r.stderr)
    run.write(r.dir .. "/out.log", "")
    assert.matches("write one file", run.in_dir(r.dir, "--check -c config.lua").stderr)
    run.write(r.dir .. "/config.lua", stdin_config():gsub('"dl.log"', '"sub/../out.log"'))
    os.execute("mkdir " .. r.dir .. "/sub")
    local dl = run.in_dir(r.dir, "--check -c config.lua")
    assert.are.equal(1, dl.status)
    assert.matches("output 'out' and the dead%-letter path write one file", dl.stderr)
    -- /dev/null takes any number of writers.
    run.write(r.dir .. "/config.lua", stdin_config():gsub('"out.log"', '"/dev/null"'):gsub('"dl.log"', '"/dev/null"'))
    assert.are.equal(0, run.in_dir(r.dir, "--check -c config.lua").status)
    run.cleanup(r.dir)
  end)
end)

describe("state_dir", function()
  it("is made (mode 0700) when it does not exist, in a directory that does", function()
    local r = run.lumberjit{config = stdin_config():gsub('"dl.log"', '"dl.log", state_dir = "state"'), input = "x\n"}
    assert.are.equal(0, r.status)
    assert.matches("state_dir state did not exist: created it", r.stderr)
    assert.are.equal("drwx------", io.popen("stat -c %A " .. run.quote(r.dir .. "/state")):read("*l"))
    run.write(r.dir .. "/config.lua", stdin_config():gsub('"dl.log"', '"dl.log", state_dir = "no/state"'))
    local missing = run.in_dir(r.dir, "--check -c config.lua")
    assert.are.equal(1, missing.status)
    assert.matches("names no/state, which does not exist, and neither does its directory no", missing.stderr)
    run.cleanup(r.dir)
  end)
end)

describe("descriptors", function()
  it("raises the soft limit to the hard one, and warns when the inputs' limits cannot fit", function()
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", [[
t = { type = "tail_input", paths = "logs/*.log", max_open_files = 500 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
lumberjit = { dead_letter_path = "dl.log" }
]])
    -- Soft 64, hard 512: raised to 512, which leaves fewer than 500.
    os.execute(string.format("cd %s && bash -c 'ulimit -Sn 64; ulimit -Hn 512; timeout -s TERM 1 %s -c config.lua 2> stderr'",
      run.quote(dir), run.quote(run.bin)))
    local stderr = run.read(dir .. "/stderr")
    assert.matches("add up to 500 descriptors, but the limit of 512 %(RLIMIT_NOFILE%)", stderr)
    os.execute(string.format("cd %s && bash -c 'ulimit -n 4096; timeout -s TERM 1 %s -c config.lua 2> stderr'",
      run.quote(dir), run.quote(run.bin)))
    assert.is_nil(run.read(dir .. "/stderr"):find("warning", 1, true))
    run.cleanup(dir)
  end)
end)
