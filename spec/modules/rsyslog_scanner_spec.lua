-- rsyslog.scanner against the LPeg grammar it stands in for: on the same
-- lines, well-formed and mutated byte by byte, both must agree on whether a
-- line matches and on every field and header it gives. Both run in the
-- real sandbox, the scanner over its record readers (scanner_check.lua).
dofile("spec/modules/spec_helper.lua")
local rsyslog = require "rsyslog"
local host = require "sandbox_host"

-- A decoder that reads each record with both (scanner_check.lua).
local function compile(template)
  return host.decoder("spec/modules/scanner_check.lua", { template = template })
end

-- Whether rsyslog.compile makes a scanner for the template.
local function has_scan(template)
  local _, _, messages = compile(template):decode("")
  return messages[1].Fields.has_scan
end

-- Both readings of `line`, each a table of the fields (keys "Fields.NAME")
-- and headers it set, or false when it does not match.
local function both(checker, line)
  local rc, err, messages = checker:decode(line)
  assert(rc == 0, err)
  local fields = messages[1].Fields
  local grammar, scanned = fields.grammar and {}, fields.scanned and {}
  for name, value in pairs(fields) do
    local who, key = name:match("^(%a+)%.(.*)$")
    if who == "grammar" then grammar[key] = value
    elseif who == "scanned" then scanned[key] = value end
  end
  return grammar, scanned
end

-- A fixed, varied set of lines (the generator is seeded).
local function lines(count)
  math.randomseed(7)
  local months = { "Jan", "feb", "MAR", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" }
  local hosts = { "snack", "db-7", "edge.example.org", "10.0.0.1", "-" }
  local tags = { "sshd[%d]:", "jls:", "postfix/smtpd[%d]:", "kernel:", "cron[%d]", "a[b]:", ":", "x[0x1f]:" }
  local messages = { "foo bar 32", " leading space", "key=value: [x] done", "", "end\n", "tab\there" }
  local out = {}
  for i = 1, count do
    local day = math.random(1, 31)
    local time = string.format("%s %s %02d:%02d:%02d%s", months[math.random(#months)],
      day < 10 and (i % 2 == 0 and " " .. day or "0" .. day) or tostring(day),
      math.random(0, 23), math.random(0, 59), math.random(0, 60), i % 7 == 0 and ".123" or "")
    local tag = tags[math.random(#tags)]:format(math.random(1, 99999))
    out[i] = string.format("<%d>%s %s %s %s", math.random(0, 191), time,
                           hosts[math.random(#hosts)], tag, messages[math.random(#messages)])
  end
  return out
end

-- Up to three bytes inserted, removed or replaced, mostly in the header.
local ALPHABET = { "<", ">", " ", ":", "[", "]", "-", "\n", "\t", "0", "1", "2", "3", "6",
                   "9", "M", "a", "/", ".", "x" }
local function mutate(line)
  for _ = 1, math.random(1, 3) do
    local at = math.random(2) == 1 and math.random(1, math.min(#line + 1, 40))
               or math.random(1, #line + 1)
    local byte, how = ALPHABET[math.random(#ALPHABET)], math.random(3)
    if how == 1 then line = line:sub(1, at - 1) .. byte .. line:sub(at)
    elseif how == 2 then line = line:sub(1, at - 1) .. line:sub(at + 1)
    else line = line:sub(1, at - 1) .. byte .. line:sub(at + 1) end
  end
  return line
end

-- Each template with a line maker from the lines above.
local TEMPLATES = {
  { "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n",
    function(line) return line end },
  { "RSYSLOG_TraditionalFileFormat", function(line) return line:gsub("^<%d+>", "") end },
  { "RSYSLOG_TraditionalForwardFormat", function(line) return line end },
  { "<%PRI%>%TIMESTAMP% %HOSTNAME% %app-name% %procid% -- %msg%",
    function(line)
      return (line:gsub("^(<%d+>... .. %d%d:%d%d:%d%d%S* %S+) ([^%s%[:]*)%[?([^%]:]*)%]?:? ?",
                        function(head, app, pid)
                          return head .. " " .. (app == "" and "-" or app) .. " "
                                 .. (pid == "" and "-" or pid) .. " -- "
                        end))
    end },
  { "%TIMESTAMP% %HOSTNAME% %syslogtag% :: %msg% ::: end\n",
    function(line)
      return line:gsub("^<%d+>(... .. %d%d:%d%d:%d%d%S* %S+ %S+) ?", "%1 :: ") .. " ::: end"
    end },
  { "%HOSTNAME%:%programname%:%procid%: %msg%\n",
    function(line) return line:gsub("^<%d+>... .. %d%d:%d%d:%d%d%S* (%S+) ([^%s%[:]*)%[?([^%]:]*)%]?:? ?",
                                      "%1:%2:%3: ") end },
}

describe("rsyslog.scanner", function()
  for _, case in ipairs(TEMPLATES) do
    local template, make = case[1], case[2]
    it("reads what the grammar reads, for " .. template, function()
      assert.is_true(has_scan(template))
      local compiled = compile(template)
      local checked, matched = 0, 0
      for _, base in ipairs(lines(400)) do
        local line = make(base)
        for variant = 0, 8 do
          local text = variant == 0 and line or variant == 1 and line .. "\n" or mutate(line)
          local grammar, scanned = both(compiled, text)
          assert.are.same(grammar, scanned, ("line %q"):format(text))
          checked = checked + 1
          if grammar then matched = matched + 1 end
        end
      end
      -- Both outcomes are well covered.
      assert.is_true(matched > checked / 5 and matched < checked, matched .. " of " .. checked)
    end)
  end

  it("is not made for templates with elements it does not read", function()
    for _, template in ipairs({ "%TIMESTAMP:::date-rfc3339% %msg%\n", "%structured-data% %msg%",
                                "%msg:::json%\n", "%syslogfacility% %msg%", "%pri-text% %msg%" }) do
      assert.is_false(has_scan(template), template)
    end
  end)

  it("is not made without a reader", function()
    assert.is_nil(rsyslog.compile("%HOSTNAME% %msg%\n").scan)
  end)

  it("refuses a time out of range, as the grammar does, instead of failing to convert it", function()
    local compiled = compile("<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg%\n")
    for _, time in ipairs({ "May 19 24:00:00", "May 19 12:60:00", "May 19 12:00:61" }) do
      local grammar, scanned = both(compiled, "<13>" .. time .. " host tag: msg")
      assert.is_falsy(grammar)
      assert.is_falsy(scanned)
    end
    -- A leap second is in range: 23:59:60 in Shanghai, 16:00:00 UTC.
    local grammar, scanned = both(compiled, "<13>May 19 23:59:60 host tag: msg")
    assert.are.equal(1779206400, grammar.Timestamp / 1e9)
    assert.are.same(grammar, scanned)
  end)
end)
