-- The matcher's regexes (PCRE2, README "Message matchers") through the binary:
-- a catastrophically backtracking pattern ends at its match limit instead of
-- holding the worker, and neither its =~ nor its !~ holds.
local run = dofile("spec/e2e/run.lua")

describe("a matcher regex", function()
  it("stops a catastrophic backtrack at its limit: neither =~ nor !~ holds", function()
    local config = [[
stdin = { type = "stdin_input" }
is = { type = "file_output", path = "is.log", message_matcher = "Payload =~ /^(a+)+$/" }
is_not = { type = "file_output", path = "is_not.log", message_matcher = "Payload !~ /^(a+)+$/" }
]]
    -- Each line would take 2^4000 steps of a backtracker without limits.
    local line = string.rep("a", 4000) .. "b\n"
    local r = run.lumberjit{config = config, input = line:rep(100) .. "aaa\nbbb\n"}
    assert.are.equal(0, r.status)
    assert.are.equal("aaa\n", run.read(r.dir .. "/is.log"))
    assert.are.equal("bbb\n", run.read(r.dir .. "/is_not.log"))
    assert.matches("100 messages matched no output", r.stderr)
    -- Said once per regex (per worker: each has its matchers), with why.
    assert.matches("message_matcher regex /%^%(a%+%)%+%$/ gave up on a message of 4001 bytes: "
                   .. "match limit exceeded; its =~ and !~ are false for such messages", r.stderr)
    run.cleanup(r.dir)
  end)

  it("reads UTF-8 characters, not bytes", function()
    local config = [[
stdin = { type = "stdin_input" }
cafe = { type = "file_output", path = "cafe.log", message_matcher = "Payload =~ /^caf.$/" }
]]
    local r = run.lumberjit{config = config, input = "caf\195\169\ncafes\n"}
    assert.are.equal(0, r.status)
    assert.are.equal("caf\195\169\n", run.read(r.dir .. "/cafe.log"))
    run.cleanup(r.dir)
  end)
end)
