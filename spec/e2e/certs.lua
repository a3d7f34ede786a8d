-- Test certificates made with the openssl command line, in a directory the
-- spec owns: a CA, a server certificate for 127.0.0.1 and localhost (the
-- names the TLS specs connect to) and a client certificate signed by the
-- same CA, for listeners that verify their clients. P-256 keys, which are
-- quick to make; valid for two days.
--
--   local certs = dofile("spec/e2e/certs.lua")
--   local c = certs.generate(dir .. "/certs")
--   -- c.ca, c.server_cert, c.server_key, c.client_cert, c.client_key: paths
--   -- c.other_ca, c.other_cert, c.other_key: a second CA and a client
--   --   certificate it signed (a client the first CA does not know)
--
-- To add a certificate: one more call of `sign` with its subject and
-- extensions.
local run = dofile("spec/e2e/run.lua")

local certs = {}

local function openssl(dir, args)
  local ok = os.execute("cd " .. run.quote(dir) .. " && openssl " .. args .. " > openssl.log 2>&1")
  assert(ok == true or ok == 0, "openssl " .. args .. " failed:\n" .. (run.read(dir .. "/openssl.log") or ""))
end

local function new_key(dir, name)
  openssl(dir, "genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out " .. name .. ".key")
end

local function self_signed_ca(dir, name, subject)
  new_key(dir, name)
  openssl(dir, string.format("req -x509 -new -key %s.key -out %s.pem -days 2 -subj %s "
    .. "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign",
    name, name, run.quote(subject)))
end

-- A key and a certificate for `subject`, signed by the CA `ca`, with the
-- given X.509v3 extension lines.
local function sign(dir, ca, name, subject, extensions)
  new_key(dir, name)
  openssl(dir, string.format("req -new -key %s.key -out %s.csr -subj %s", name, name, run.quote(subject)))
  run.write(dir .. "/" .. name .. ".ext", table.concat(extensions, "\n") .. "\n")
  openssl(dir, string.format("x509 -req -in %s.csr -CA %s.pem -CAkey %s.key -CAcreateserial "
    .. "-out %s.pem -days 2 -extfile %s.ext", name, ca, ca, name, name))
end

function certs.generate(dir)
  os.execute("mkdir -p " .. run.quote(dir))
  self_signed_ca(dir, "ca", "/CN=lumberjit spec CA")
  sign(dir, "ca", "server", "/CN=localhost",
    { "subjectAltName=IP:127.0.0.1,DNS:localhost", "extendedKeyUsage=serverAuth" })
  sign(dir, "ca", "client", "/CN=spec-client", { "extendedKeyUsage=clientAuth" })
  self_signed_ca(dir, "other_ca", "/CN=another CA")
  sign(dir, "other_ca", "other", "/CN=stranger", { "extendedKeyUsage=clientAuth" })
  local function path(name) return dir .. "/" .. name end
  return {
    ca = path("ca.pem"),
    server_cert = path("server.pem"), server_key = path("server.key"),
    client_cert = path("client.pem"), client_key = path("client.key"),
    other_ca = path("other_ca.pem"),
    other_cert = path("other.pem"), other_key = path("other.key"),
  }
end

return certs
