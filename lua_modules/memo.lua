-- memo: bounded memo tables that LPeg can use as query captures.
--
--   local programname_of = memo.new(function(tag) return ... end)
--   local p = C(tag) / programname_of      -- a hit is a table lookup in C
--
-- A hit costs no Lua call; a miss calls compute(key) once and stores the
-- result. When `limit` entries are held the table starts over, so a stream
-- of distinct keys (pids, timestamps) cannot grow it without bound.
-- compute must not return nil: LPeg would then capture the matched text;
-- return false for "none" and let the caller read `memo[key] or nil`.

local memo = {}

function memo.new(compute, limit)
  limit = limit or 4096
  local count = 0
  local meta = {}
  function meta.__index(cache, key)
    local value = compute(key)
    if count >= limit then
      for stored in pairs(cache) do cache[stored] = nil end
      count = 0
    end
    count = count + 1
    rawset(cache, key, value)
    return value
  end
  return setmetatable({}, meta)
end

return memo
