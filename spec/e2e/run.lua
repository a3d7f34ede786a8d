-- Runs the real lumberjit binary for end-to-end specs: writes the config and
-- the input to a fresh temporary directory, runs the binary there and
-- returns what it wrote to stdout, stderr and the files it made.
local run = {}

run.bin = os.getenv("LUMBERJIT_BIN") or "build/lumberjit"
run.root = io.popen("pwd"):read("*l")
if run.bin:sub(1, 1) ~= "/" then run.bin = run.root .. "/" .. run.bin end

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end
run.quote = shell_quote

function run.read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local data = f:read("*a")
  f:close()
  return data
end

-- The size of the file at path, in bytes.
function run.size(path)
  local f = assert(io.open(path, "rb"))
  local size = f:seek("end")
  f:close()
  return size
end

function run.write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

function run.tmpdir()
  local dir = io.popen("mktemp -d /tmp/lumberjit-spec-XXXXXX"):read("*l")
  return dir
end

function run.cleanup(dir)
  os.execute("rm -rf " .. shell_quote(dir))
end

-- run.lumberjit{config = TEXT or config_path = PATH,
--               input = TEXT or input_path = PATH,
--               args = "--check", files = {name = text}}
-- Returns {status, stdout, stderr, dir}; the caller cleans dir up.
function run.lumberjit(opts)
  local dir = run.tmpdir()
  local config = opts.config_path
  if opts.config then
    config = dir .. "/config.lua"
    run.write(config, opts.config)
  end
  for name, text in pairs(opts.files or {}) do
    run.write(dir .. "/" .. name, text)
  end
  local input = opts.input_path or dir .. "/input"
  if not opts.input_path then run.write(input, opts.input or "") end
  -- The kill is a guard: a run that hangs fails its spec (status 137)
  -- instead of hanging the suite.
  local cmd = string.format("cd %s && timeout -s KILL 60 %s %s -c %s < %s > stdout 2> stderr; echo $?",
    shell_quote(dir), shell_quote(run.bin), opts.args or "", shell_quote(config),
    shell_quote(input))
  local status = tonumber(io.popen(cmd):read("*l"))
  return {
    status = status,
    stdout = run.read(dir .. "/stdout"),
    stderr = run.read(dir .. "/stderr"),
    dir = dir,
  }
end

-- Runs `lumberjit ARGS` in dir, its standard input from stdin_path (none:
-- /dev/null), its output in dir/stdout and dir/stderr. The kill after
-- `guard` seconds (default 60) only guards against a hang, which then fails
-- its spec (status 137) instead of hanging the suite.
-- Returns {status, stdout, stderr}.
function run.in_dir(dir, args, stdin_path, guard)
  local cmd = string.format("cd %s && timeout -s KILL %d %s %s < %s > stdout 2> stderr; echo $?",
    shell_quote(dir), guard or 60, shell_quote(run.bin), args, shell_quote(stdin_path or "/dev/null"))
  return {
    status = tonumber(io.popen(cmd):read("*l")),
    stdout = run.read(dir .. "/stdout"),
    stderr = run.read(dir .. "/stderr"),
  }
end

-- Runs lumberjit in dir with the config at config_path for `seconds`,
-- then stops it with SIGTERM, as a user would; its stderr goes on at the
-- end of dir/stderr.
function run.for_seconds(dir, config_path, seconds)
  return os.execute(string.format("cd %s && timeout -s TERM %s %s -c %s 2>> stderr",
    shell_quote(dir), seconds, shell_quote(run.bin), shell_quote(config_path)))
end

-- The AddressSanitizer runtime the binary links (CI's second build), or
-- nil: a spec that preloads a library must preload it first, and may do
-- fewer rounds on the slower build.
function run.asan_runtime()
  local p = io.popen("ldd " .. shell_quote(run.bin) .. " 2>/dev/null | awk '/libasan/ { print $3 }'")
  local path = p:read("*l")
  p:close()
  return path ~= "" and path or nil
end

-- n distinct ports (default 1) free on 127.0.0.1 for TCP and UDP now,
-- from below the ephemeral range (32768 and up): the kernel's pick (port
-- 0) is from that range, where an outgoing connection of any process can
-- take it as its own end before the spec's listener binds it ("address
-- already in use").
function run.free_ports(n)
  local p = io.popen(string.format([[timeout -s KILL 10 python3 -c '
import random, socket
ports = set()
while len(ports) < %d:
    port = random.randint(20000, 32767)
    try:
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            with socket.socket(socket.AF_INET, kind) as s:
                s.bind(("127.0.0.1", port))
        ports.add(port)
    except OSError:
        pass
print(*ports)
']], n or 1))
  local out = {}
  for port in p:read("*a"):gmatch("%d+") do out[#out + 1] = tonumber(port) end
  p:close()
  assert(#out == (n or 1), "could not find free ports")
  return (table.unpack or unpack)(out)
end

-- How many times the Lua pattern matches in text (nil: none).
function run.count(text, pattern)
  local n = 0
  for _ in (text or ""):gmatch(pattern) do n = n + 1 end
  return n
end

function run.lines(text)
  local out = {}
  for line in (text or ""):gmatch("([^\n]*)\n") do out[#out + 1] = line end
  return out
end

return run
