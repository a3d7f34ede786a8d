-- caseless(word): an LPeg pattern matching word in any mix of cases, for
-- the names syslog and dates spell as they like ("May", "MAY", "warning").
local lpeg = require "lpeg"

local P, S = lpeg.P, lpeg.S

return function(word)
  local p = P(true)
  for i = 1, #word do
    local ch = word:sub(i, i)
    p = p * S(ch:lower() .. ch:upper())
  end
  return p
end
