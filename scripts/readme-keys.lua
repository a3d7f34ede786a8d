-- readme-keys.lua: the README's tables of each plugin type's keys, made
-- from the code (`lumberjit --help TYPE --markdown`, whose keys and
-- defaults are the ones the loader uses), between the markers
--   <!-- keys: made by scripts/readme-keys.lua; do not edit -->
--   <!-- /keys -->
--
--   lua scripts/readme-keys.lua BIN README.md           rewrites them
--   lua scripts/readme-keys.lua BIN README.md --check   exit 1 if stale
-- spec/e2e/readme_keys_spec.lua runs the check.
local bin, readme, mode = arg[1], arg[2], arg[3]
local BEGIN = "<!-- keys: made by scripts/readme-keys.lua; do not edit -->"
local END = "<!-- /keys -->"

local function run(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  assert(p:close(), cmd .. " failed")
  return out
end

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- The types in the order --help lists them, then the global settings.
local usage = run(quote(bin) .. " --help")
local list = usage:match("Plugin types[^\n]*\n[^\n]*\n(.*)$") or error("no type list in --help")
local types = {}
for name in list:gmatch("[%w_]+") do types[#types + 1] = name end
types[#types + 1] = "lumberjit"

local parts = {}
for _, t in ipairs(types) do parts[#parts + 1] = run(quote(bin) .. " --help " .. t .. " --markdown") end
local block = BEGIN .. "\n" .. table.concat(parts, "\n") .. END

local f = assert(io.open(readme))
local text = f:read("*a")
f:close()
local s, e = text:find(BEGIN, 1, true), select(2, text:find(END, 1, true))
assert(s and e, readme .. " has no keys markers")
local current = text:sub(s, e)
if mode == "--check" then
  if current ~= block then
    io.stderr:write(readme .. ": the key tables differ from the code's; run lua scripts/readme-keys.lua "
                    .. bin .. " " .. readme .. "\n")
    os.exit(1)
  end
  return
end
f = assert(io.open(readme, "w"))
f:write(text:sub(1, s - 1) .. block .. text:sub(e + 1))
f:close()
