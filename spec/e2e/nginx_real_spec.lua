-- A real nginx (Debian's nginx-light) writes the same requests to two
-- access logs, one with escape=default and one with escape=json, of the
-- same variables; lumberjit decodes the first with decoders/nginx.lua and
-- writes JSON, which must hold every field of every record of the second,
-- as nginx_client.py reads it. nginx runs from a temporary prefix with its
-- own config, pid and logs, on 127.0.0.1 only, and is stopped by its PID.
local run = dofile("spec/e2e/run.lua")

local HELPER = run.root .. "/spec/e2e/nginx_client.py"

local function helper(args)
  local pipe = assert(io.popen("python3 " .. run.quote(HELPER) .. " " .. args))
  local out = pipe:read("*a")
  pipe:close()
  return out
end

local function nginx_binary()
  for _, path in ipairs({ "/usr/sbin/nginx", "/usr/bin/nginx" }) do
    local f = io.open(path, "rb")
    if f then f:close() return path end
  end
end

local function config(dir, ports, formats)
  local temp = {}
  for _, kind in ipairs({ "client_body", "proxy", "fastcgi", "uwsgi", "scgi" }) do
    temp[#temp + 1] = string.format("%s_temp_path %s/%s;", kind, dir, kind)
  end
  return string.format([[
daemon off;
master_process off;
pid %s/nginx.pid;
error_log %s/error.log info;
events { worker_connections 64; }
http {
  %s
  log_format many '%s';
  log_format many_json escape=json '%s';
  access_log %s/default.log many;
  access_log %s/json.log many_json;
  client_header_timeout 1s;
  large_client_header_buffers 4 2k;
  gzip on;
  gzip_min_length 1;
  gzip_types text/plain;
  default_type text/plain;
  upstream pool {
    server 127.0.0.1:%d max_fails=0;
    server 127.0.0.1:%d max_fails=0;
  }
  server {
    listen 127.0.0.1:%d;
    location / { return 200 "ok\n"; }
    location /gzip { return 200 "%s"; }
    location /up/ { proxy_pass http://pool; proxy_next_upstream error; }
  }
  server {
    listen 127.0.0.1:%d;
    access_log off;
    location / { return 200 "from upstream\n"; }
  }
}
]], dir, dir, table.concat(temp, "\n  "), formats[1], formats[2], dir, dir,
    ports[2], ports[3], ports[1], string.rep("compressible text ", 200), ports[3])
end

local function alive(pid)
  return os.execute("kill -0 " .. pid .. " 2>/dev/null") == 0
end

local nginx = nginx_binary()

describe("nginx decoder against a real nginx", function()
  if not nginx then
    pending("nginx is not installed (apt-get install nginx-light; scripts/setup does)")
    return
  end

  local dir, pid

  before_each(function()
    dir = run.tmpdir()
  end)

  after_each(function()
    if pid and alive(pid) then os.execute("kill -KILL " .. pid) end
    pid = nil
    run.cleanup(dir)
  end)

  it("decodes every field of every record as nginx's escape=json log has it", function()
    local ports = {}
    for port in helper("ports 3"):gmatch("%d+") do ports[#ports + 1] = tonumber(port) end
    local formats = run.lines(helper("formats"))
    run.write(dir .. "/nginx.conf", config(dir, ports, formats))
    pid = assert(tonumber(io.popen(string.format(
      "%s -p %s -e %s/error.log -c %s/nginx.conf >%s/nginx.out 2>&1 & echo $!",
      nginx, run.quote(dir), run.quote(dir), run.quote(dir), run.quote(dir))):read("*l")))
    -- Listening once the pid file is written (nginx writes it after binding).
    for _ = 1, 100 do
      if run.read(dir .. "/nginx.pid") then break end
      os.execute("sleep 0.05")
    end
    assert.truthy(run.read(dir .. "/nginx.pid"), run.read(dir .. "/nginx.out"))

    local logged = tonumber(helper("send " .. ports[1]))
    os.execute("kill -QUIT " .. pid)
    for _ = 1, 200 do
      if not alive(pid) then break end
      os.execute("sleep 0.05")
    end
    assert.is_false(alive(pid), "nginx did not stop on SIGQUIT")
    pid = nil
    local json_log = run.read(dir .. "/json.log") or ""
    assert.equal(logged, #run.lines(json_log), json_log)

    run.write(dir .. "/lumberjit.lua", string.format([[
lumberjit = { dead_letter_path = %q }
file = { type = "file_input", path = %q, decoder = "nginx" }
nginx = { type = "decoder", filename = "decoders/nginx.lua", log_format = %q }
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "file_output", path = %q, encoder = "json", message_matcher = "TRUE" }
]], dir .. "/dead.log", dir .. "/default.log", formats[1], dir .. "/out.json"))
    local result = run.in_dir(dir, "-c lumberjit.lua")
    assert.equal(0, result.status, result.stderr)
    assert.equal("", run.read(dir .. "/dead.log") or "")
    local report = helper(string.format("compare %s %s %s", run.quote(dir .. "/out.json"),
                                        run.quote(dir .. "/json.log"),
                                        run.quote(dir .. "/default.log")))
    assert.equal("ok " .. logged .. "\n", report)
  end)
end)
