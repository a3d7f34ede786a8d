-- best_of: the seconds of the fastest of `rounds` (default 5) calls of
-- run(n), after one warm-up call of run(n / 10) that lets the JIT compile:
-- the machine's other work only ever adds time, so the least is the
-- plugin's own cost.
--
--   local best_of = require "best_of"
--   local seconds = best_of(function(n) for i = 1, n do f() end end, 1e6)
return function(run, n, rounds)
  run(n / 10)
  local best = math.huge
  for _ = 1, rounds or 5 do
    local started = os.clock()
    run(n)
    best = math.min(best, os.clock() - started)
  end
  return best
end
