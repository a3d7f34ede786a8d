-- The third-party sources (README "Building and installing"): scripts/fetch-deps
-- unpacks the pinned files from a given folder with no download and refuses
-- one that is not the pinned one; the LPeg patch stops the configure when it
-- does not apply. Uses the deps folder of LUMBERJIT_BIN's build tree.
local run = dofile("spec/e2e/run.lua")

local build = run.bin:match("^(.*)/[^/]+$")
local q = run.quote

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"status $?\"")
  local out = p:read("*a")
  p:close()
  return tonumber(out:match("status (%d+)\n$")), out:gsub("status %d+\n$", "")
end

local function cache(name)
  local text = run.read(build .. "/CMakeCache.txt") or ""
  return text:match("\n" .. name .. ":[A-Z]+=([^\n]*)")
end

local deps = cache("LUMBERJIT_DEPS_DIR")
local sources = cache("LUMBERJIT_DEPS_SOURCES")
if not sources or sources == "" then sources = deps .. "/sources" end

describe("scripts/fetch-deps", function()
  it("unpacks the pinned files of a folder and refuses one with another checksum", function()
    local dsc = "lua-lpeg_1.0.2-2.dsc"
    if not run.read(sources .. "/" .. dsc) then
      pending("no pinned source files in " .. sources .. " (the deps were unpacked elsewhere)")
      return
    end
    local dir = run.tmpdir()
    -- Given a folder, it never downloads: apt-get is not on its PATH.
    local path = dir .. "/bin:/usr/bin:/bin"
    os.execute("mkdir " .. q(dir .. "/bin") .. " && ln -s /bin/false " .. q(dir .. "/bin/apt-get"))
    local status, out = sh(string.format("PATH=%s %s/scripts/fetch-deps %s %s", q(path),
                                         q(run.root), q(dir .. "/deps"), q(sources)))
    assert.are.equal(0, status, out)
    assert.matches("^lua%-lpeg %(1%.0%.2%-2%)", run.read(dir .. "/deps/lpeg/debian/changelog"))
    assert.is_truthy(run.read(dir .. "/deps/luajit/src/luajit.h"))
    assert.is_truthy(run.read(dir .. "/deps/cjson/lua_cjson.c"))
    -- Unpacked, it is only checked, even without the folder.
    assert.are.equal(0, (sh(string.format("PATH=%s %s/scripts/fetch-deps %s", q(path),
                                          q(run.root), q(dir .. "/deps")))))

    os.execute(string.format("cp -r %s %s", q(sources), q(dir .. "/tampered")))
    local f = assert(io.open(dir .. "/tampered/" .. dsc, "ab"))
    f:write("\n")
    f:close()
    status, out = sh(string.format("PATH=%s %s/scripts/fetch-deps %s %s", q(path),
                                   q(run.root), q(dir .. "/deps2"), q(dir .. "/tampered")))
    assert.are_not.equal(0, status)
    assert.matches("tampered/lua%-lpeg_1%.0%.2%-2%.dsc does not have the pinned SHA%-256 %x+", out)
    run.cleanup(dir)
  end)
end)

describe("the LPeg patch", function()
  it("stops the configure, naming the patch and the file, when it does not apply", function()
    local dir = run.tmpdir()
    -- The pinned versions, by their changelogs, and an lpvm.c whose VM loop
    -- is written differently.
    for _, pkg in ipairs{"luajit", "lpeg", "cjson"} do
      os.execute(string.format("mkdir -p %s && cp %s %s", q(dir .. "/deps/" .. pkg .. "/debian"),
        q(deps .. "/" .. pkg .. "/debian/changelog"), q(dir .. "/deps/" .. pkg .. "/debian/")))
    end
    local lpvm = assert(run.read(deps .. "/lpeg/lpvm.c"))
    run.write(dir .. "/deps/lpeg/lpvm.c", (lpvm:gsub("  for %(;;%) {\n", "  while (1) {\n")))
    local status, out = sh(string.format("cmake -S %s -B %s -DLUMBERJIT_DEPS_DIR=%s",
      q(run.root), q(dir .. "/build"), q(dir .. "/deps")))
    assert.are_not.equal(0, status)
    assert.matches("patches/lpeg%-interruptible%.patch does not apply to", out)
    assert.matches("deps/lpeg/lpvm%.c", out)
    assert.matches("hunks? FAILED", out)
    run.cleanup(dir)
  end)
end)
