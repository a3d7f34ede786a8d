-- lazy: a module table whose costly fields are built when first read, so
-- that a sandbox's state holds only what its plugin uses (each instance of
-- a plugin holds its own copy of every module it requires).
--
--   local build = {}
--   local m = require "lazy" (build)
--   function build.grammar() return ... end   -- m.grammar: built once, kept
--
-- A name with no builder reads as nil, as in a plain table.

return function(builders)
  return setmetatable({}, { __index = function(module, name)
    local build = builders[name]
    if build == nil then return nil end
    local value = build()
    rawset(module, name, value)
    return value
  end })
end
