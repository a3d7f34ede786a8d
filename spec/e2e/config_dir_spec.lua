-- A configuration directory (src/config/config.h): -c DIR evaluates its
-- *.lua files in name order as one configuration; a name defined by two
-- files is an error naming both; every error names the file and line it
-- is about; --check and --try take the directory too.
local run = dofile("spec/e2e/run.lua")

-- A temporary directory with conf.d/ holding files { name = text } (a
-- name with a slash makes its folder).
local function conf_dir(files)
  local dir = run.tmpdir()
  for name, text in pairs(files) do
    local folder = name:match("^(.*)/[^/]*$")
    if folder then os.execute("mkdir -p " .. run.quote(dir .. "/conf.d/" .. folder)) end
    os.execute("mkdir -p " .. run.quote(dir .. "/conf.d"))
    run.write(dir .. "/conf.d/" .. name, text)
  end
  return dir
end

-- lumberjit ARGS in dir, stdin from `input`; { status, stdout, stderr }.
local function lumberjit(dir, args, input)
  run.write(dir .. "/input", input or "")
  return run.in_dir(dir, args, dir .. "/input")
end

local APP = {
  -- Its last line has no newline: the next file's lines are its own.
  ["10-inputs.lua"] = [[
-- one file per application
app = { type = "stdin_input", decoder = "upper" }]],
  ["20-decoders.lua"] = [[
upper = { type = "decoder",
  filename = "plugins/upper.lua" }
]],
  ["30-outputs.lua"] = [[
lumberjit = { dead_letter_path = "dead.log" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]],
  ["plugins/upper.lua"] = [[
function process_message(line) inject_message({Payload = line:upper()}) end
]],
  ["README"] = "not a configuration file\n",
  [".10-hidden.lua"] = "this is no Lua\n",
}

local function with(extra)
  local files = {}
  for k, v in pairs(APP) do files[k] = v end
  for k, v in pairs(extra) do files[k] = v end
  return files
end

describe("a configuration directory", function()
  it("is one configuration of its *.lua files, in name order; other files and subfolders are not read", function()
    local dir = conf_dir(APP)
    local r = lumberjit(dir, "--check -c conf.d")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("conf.d: configuration OK (3 plugins)\n", r.stdout)
    r = lumberjit(dir, "-c conf.d", "a\nb\n")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("A\nB\n", r.stdout)
    run.cleanup(dir)
  end)

  it("lets a file read what the files before it defined", function()
    local dir = conf_dir(with{ ["40-more.lua"] = [[
copy = { type = "stdout_output", message_matcher = out.message_matcher }
]] })
    local r = lumberjit(dir, "-c conf.d", "a\n")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal("A\nA\n", r.stdout)
    run.cleanup(dir)
  end)

  it("refuses a name two files define, naming both files and lines", function()
    local dir = conf_dir(with{ ["40-again.lua"] = "\n\napp = { type = \"stdin_input\" }\n" })
    local r = lumberjit(dir, "--check -c conf.d")
    assert.are.equal(1, r.status)
    assert.are.equal("lumberjit: conf.d/40-again.lua:3: 'app' is defined in conf.d/10-inputs.lua:2 already: " ..
      "each global is defined by one file of the directory\n", r.stderr)
    run.cleanup(dir)
  end)

  it("refuses the global settings in two files", function()
    local dir = conf_dir(with{ ["05-settings.lua"] = "lumberjit = { workers = 1 }\n" })
    local r = lumberjit(dir, "--check -c conf.d")
    assert.are.equal(1, r.status)
    assert.are.equal("lumberjit: conf.d/30-outputs.lua:1: 'lumberjit' is defined in conf.d/05-settings.lua:1 already: " ..
      "each global is defined by one file of the directory\n", r.stderr)
    run.cleanup(dir)
  end)

  it("names the file and line of each error: a key, a reference, Lua's own, a plugin's file", function()
    local cases = {
      { { ["35-bad.lua"] = "\nx = {\n  type = \"stdout_output\",\n  colour = 1,\n  message_matcher = \"TRUE\" }\n" },
        "conf.d/35-bad.lua:4: output 'x' (stdout_output): key 'colour' is unknown" },
      { { ["35-bad.lua"] = "x = {\n  type = \"stdout_output\",\n  encoder = \"nope\",\n  message_matcher = \"TRUE\" }\n" },
        "conf.d/35-bad.lua:3: output 'x': key 'encoder' names 'nope', which is no encoder in the configuration" },
      { { ["35-bad.lua"] = "local a = 1\nx = {\n" },
        "conf.d/35-bad.lua:3: unexpected symbol near '<eof>'" },
      { { ["35-bad.lua"] = "local a = 1\nerror('no')\n" },
        "conf.d/35-bad.lua:2: no" },
      { { ["20-decoders.lua"] = "upper = { type = \"decoder\",\n  filename = \"plugins/missing.lua\" }\n" },
        "conf.d/20-decoders.lua:2: decoder 'upper' (decoder): key 'filename' names 'plugins/missing.lua', which is not a readable file" },
    }
    for _, case in ipairs(cases) do
      local dir = conf_dir(with(case[1]))
      local r = lumberjit(dir, "--check -c conf.d")
      assert.are.equal(1, r.status)
      assert.are.equal("lumberjit: " .. case[2], r.stderr:sub(1, #("lumberjit: " .. case[2])))
      run.cleanup(dir)
    end
  end)

  it("needs a *.lua file", function()
    local dir = conf_dir({ ["README"] = "nothing here\n" })
    local r = lumberjit(dir, "--check -c conf.d")
    assert.are.equal(1, r.status)
    assert.are.equal("lumberjit: conf.d: the configuration directory has no *.lua file\n", r.stderr)
    run.cleanup(dir)
  end)

  it("works with --try", function()
    local dir = conf_dir(APP)
    local r = lumberjit(dir, "-c conf.d --try upper", "a\n")
    assert.are.equal(0, r.status, r.stderr)
    assert.truthy(r.stdout:find('Payload: "A"', 1, true), r.stdout)
    run.cleanup(dir)
  end)
end)
