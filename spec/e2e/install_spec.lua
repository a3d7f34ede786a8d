-- Installing (README "Building and installing"): `cmake --install` of the
-- build tree that made LUMBERJIT_BIN, run from elsewhere and moved, and the
-- .deb that `cpack -G DEB` makes, inspected with dpkg-deb and run unpacked
-- (installing it would change the machine running the specs).
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

local build = run.bin:match("^(.*)/[^/]+$")
local q = run.quote

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"status $?\"")
  local out = p:read("*a")
  p:close()
  local status = tonumber(out:match("status (%d+)\n$"))
  return status, out:gsub("status %d+\n$", "")
end

-- Runs the stdin example of the tree at prefix with prefix's bin/lumberjit,
-- from the directory cwd; returns its status, stdout and stderr.
local function run_example(prefix, docdir, cwd)
  local examples = docdir .. "/examples"
  local status = tonumber(io.popen(string.format(
    "cd %s && %s -c %s < %s > stdout 2> stderr; echo $?", q(cwd),
    q(prefix .. "/bin/lumberjit"), q(examples .. "/stdin-syslog-json.lua"),
    q(examples .. "/data/syslog.txt"))):read("*l"))
  return status, run.read(cwd .. "/stdout"), run.read(cwd .. "/stderr")
end

local function assert_example_runs(prefix, docdir, cwd)
  local status, stdout, stderr = run_example(prefix, docdir, cwd)
  assert.are.equal(0, status, stderr)
  local lines = run.lines(stdout)
  assert.are.equal(6, #lines)
  assert.are.equal("foo bar 32", cjson.decode(lines[1]).message)
  -- The dead letters go where the run is, not into the installed examples.
  assert.matches("this line was not written by rsyslog",
                 run.read(cwd .. "/syslog.dead-letter.log"))
end

describe("cmake --install", function()
  it("makes a tree that runs the stdin example from any directory, moved or not", function()
    local dir = run.tmpdir()
    local prefix, moved, cwd = dir .. "/prefix", dir .. "/moved", dir .. "/elsewhere"
    local status, out = sh(string.format("cmake --install %s --prefix %s", q(build), q(prefix)))
    assert.are.equal(0, status, out)
    for _, path in ipairs{"bin/lumberjit", "share/lumberjit/sandbox/decoders/rsyslog.lua",
        "share/lumberjit/lua_modules/rsyslog.lua", "share/man/man1/lumberjit.1",
        "share/doc/lumberjit/LICENSE", "share/doc/lumberjit/examples/stdin-syslog-json.lua",
        "lib/systemd/system/lumberjit.service"} do
      assert.is_truthy(run.read(prefix .. "/" .. path), path)
    end
    -- The unit runs the binary it was installed with.
    assert.truthy(run.read(prefix .. "/lib/systemd/system/lumberjit.service"):find(
      "\nExecStart=" .. prefix .. "/bin/lumberjit -c /etc/lumberjit/conf.d\n", 1, true))
    os.execute("mkdir " .. q(cwd))
    assert_example_runs(prefix, prefix .. "/share/doc/lumberjit", cwd)

    -- Moved, it reads its own share/lumberjit: found from the binary's path.
    assert(os.rename(prefix, moved))
    os.execute("rm -f " .. q(cwd) .. "/*")
    assert_example_runs(moved, moved .. "/share/doc/lumberjit", cwd)
    run.write(cwd .. "/missing.lua", [[
stdin = { type = "stdin_input", decoder = "d" }
d = { type = "decoder", filename = "decoders/none.lua" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]])
    local _, said = sh(string.format("cd %s && %s -c missing.lua --check", q(cwd),
                                     q(moved .. "/bin/lumberjit")))
    local real = io.popen("realpath " .. q(moved)):read("*l")
    assert.truthy(said:find("(looked in . and " .. real .. "/share/lumberjit/sandbox)",
                            1, true), said)
    run.cleanup(dir)
  end)
end)

describe("cpack -G DEB", function()
  it("makes a .deb with the dlopened librdkafka1 among its Depends, that runs unpacked", function()
    local dir = run.tmpdir()
    local status, out = sh(string.format("cpack -G DEB --config %s -B %s",
                                         q(build .. "/CPackConfig.cmake"), q(dir)))
    assert.are.equal(0, status, out)
    local deb = io.popen("ls " .. q(dir) .. "/*.deb"):read("*l")
    assert.truthy(deb, out)
    local _, depends = sh("dpkg-deb -f " .. q(deb) .. " Depends")
    -- By hand: dlopened, so dpkg-shlibdeps cannot see them.
    assert.matches("librdkafka1 %(>= [%d.]+%)", depends)
    assert.matches("libssl3", depends)
    -- By hand: the symbols are older than the matcher's PCRE2_MATCH_INVALID_UTF.
    assert.matches("libpcre2%-8%-0 %(>= 10%.34%)", depends)
    -- Found by dpkg-shlibdeps in the binary's links.
    for _, package in ipairs{"libc6", "libuv1", "zlib1g", "libpcre2%-8%-0", "libhttp%-parser2%.9"} do
      assert.matches(package .. " %(>= [^)]+%)", depends)
    end
    local _, contents = sh("dpkg-deb -c " .. q(deb))
    for _, path in ipairs{"./usr/bin/lumberjit", "./usr/share/lumberjit/sandbox/encoders/json.lua",
        "./usr/share/lumberjit/lua_modules/syslog.lua", "./usr/share/man/man1/lumberjit.1",
        "./usr/share/doc/lumberjit/examples/stdin-syslog-json.lua",
        "./usr/lib/systemd/system/lumberjit.service"} do
      assert.truthy(contents:find(path, 1, true), path)
    end
    local root, cwd = dir .. "/root", dir .. "/elsewhere"
    assert.are.equal(0, (sh("dpkg-deb -x " .. q(deb) .. " " .. q(root))))
    os.execute("mkdir " .. q(cwd))
    assert_example_runs(root .. "/usr", root .. "/usr/share/doc/lumberjit", cwd)
    run.cleanup(dir)
  end)
end)
