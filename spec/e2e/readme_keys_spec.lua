-- The README's tables of each type's keys are the ones the code declares
-- (scripts/readme-keys.lua makes them from lumberjit --help TYPE
-- --markdown), and --help names what it does not know.
local run = dofile("spec/e2e/run.lua")

describe("the plugin types' keys", function()
  it("are in the README as the code declares them", function()
    local cmd = string.format("lua scripts/readme-keys.lua '%s' README.md --check 2>&1", run.bin)
    local p = io.popen(cmd)
    local out = p:read("*a")
    local ok = p:close()
    assert.is_true(ok, out)
  end)

  it("are shown by --help TYPE, and an unknown type is a usage error", function()
    local dir = run.tmpdir()
    local r = run.in_dir(dir, "--help tail_input")
    assert.are.equal(0, r.status)
    assert.matches("tail_input %(input%): follows", r.stdout)
    assert.matches("rotate_wait_ms%s+number, up to 3600000; default 5000", r.stdout)
    r = run.in_dir(dir, "--help tail_inptu")
    assert.are.equal(2, r.status)
    assert.matches("no plugin type is named 'tail_inptu'", r.stderr)
    r = run.in_dir(dir, "--help")
    assert.matches("stdin_input, file_input, tail_input", r.stdout)
    run.cleanup(dir)
  end)
end)
