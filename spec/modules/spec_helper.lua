-- Loaded first by every spec (dofile): makes require find lua_modules/ and
-- the spec helpers when busted runs from the repository root.
package.path = "./lua_modules/?.lua;./spec/modules/?.lua;" .. package.path
