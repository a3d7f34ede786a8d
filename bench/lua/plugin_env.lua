-- plugin_env: loads a sandbox/*.lua plugin into a plain LuaJIT environment
-- for the micro-benchmarks, which time a plugin's own Lua: read_config,
-- read_zoneinfo (the system's zone files), loadstring, require (lpeg, cjson, bit, then
-- lua_modules/ loaded into the environment, as the sandbox does) and the
-- functions the caller gives (inject_message, read_message, ...). It is not
-- the sandbox, and nothing tests plugins with it: the specs run them in the
-- real one (spec/modules/sandbox_host.lua).
--
--   local env = plugin_env.load("sandbox/decoders/syslog.lua", { tz = "UTC" },
--                               { inject_message = function() end })
--   env.process_message(line)

local plugin_env = {}

local GLOBALS = { "assert", "error", "ipairs", "next", "pairs", "pcall", "print", "rawequal",
                  "rawget", "rawset", "select", "setmetatable", "getmetatable", "tonumber",
                  "tostring", "type", "unpack", "xpcall", "string", "table", "math", "bit" }

local function zone_file(name)
  local file, err = io.open("/usr/share/zoneinfo/" .. name, "rb")
  if not file then return nil, err end
  local bytes = file:read("*a")
  file:close()
  return bytes
end

function plugin_env.load(path, settings, functions)
  local env, loaded = {}, {}
  for _, name in ipairs(GLOBALS) do env[name] = _G[name] end
  env.os = { time = os.time, clock = os.clock, date = os.date }
  env._G = env
  -- Source text only, run in the plugin's environment, as in the sandbox.
  env.loadstring = function(source, chunk_name)
    local chunk, err = loadstring(source, chunk_name)
    if chunk then setfenv(chunk, env) end
    return chunk, err
  end
  env.load = env.loadstring
  env.read_config = function(key) return (settings or {})[key] end
  env.read_zoneinfo = zone_file
  env.require = function(name)
    if loaded[name] == nil then
      if name == "lpeg" or name == "cjson" or name == "bit" then
        loaded[name] = require(name)
      else
        local chunk = assert(loadfile("lua_modules/" .. name:gsub("%.", "/") .. ".lua"))
        setfenv(chunk, env)
        loaded[name] = chunk(name) or true
      end
    end
    return loaded[name]
  end
  for name, f in pairs(functions or {}) do env[name] = f end
  local chunk = assert(loadfile(path))
  setfenv(chunk, env)
  chunk()
  return env
end

return plugin_env
