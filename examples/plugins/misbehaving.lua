-- A decoder that misbehaves on purpose, to show the sandbox limits at work
-- (examples/sandbox-limits.lua). Lines containing LOOP spin forever, HOG
-- allocates without bound, BIG emits a 10 MB payload; every other line is
-- passed on untouched.
local find, rep = string.find, string.rep

function process_message(line)
  if find(line, "LOOP", 1, true) then
    local n = 0
    while true do n = n + 1 end
  elseif find(line, "HOG", 1, true) then
    local hoard = {}
    while true do hoard[#hoard + 1] = rep("x", 65536) .. #hoard end
  elseif find(line, "BIG", 1, true) then
    inject_message({Payload = rep("B", 10 * 1024 * 1024)})
    return 0
  end
  inject_message({Payload = line})
  return 0
end
