-- Encoder: each message as a line of an rsyslog template, the way rsyslog
-- writes files or forwards (the inverse of decoders/rsyslog.lua):
--
--   template = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n"
--   --> <44>May 19 18:30:17 snack jls: foo bar 32
--
-- Settings (read_config):
--   template  rsyslog template string, or a built-in name such as
--             "RSYSLOG_ForwardFormat" or "RSYSLOG_FileFormat" (the names of
--             rsyslog.templates; default "RSYSLOG_TraditionalFileFormat")
--   tz        zone the dates are written in: "UTC" (default),
--             "Asia/Shanghai", "+08:00", ...
-- What each property writes (msg is the Payload, hostname the Hostname,
-- pri the field pri or facility * 8 + Severity, $!name the field name, ...)
-- and each option does is listed at the top of lua_modules/rsyslog/format.lua.
-- The template is written as it is, its final "\n" included: give the output
-- newline = false, or every line gets a second one.
-- The template is compiled when the plugin loads; an unknown property, an
-- unsupported option or a bad zone fails the load with a message naming it
-- and its position in the template.

local format = require "rsyslog.format"

local render = format.compile(read_config("template") or "RSYSLOG_TraditionalFileFormat",
                              { tz = read_config("tz") or "UTC" })

function process_message()
  return render(read_message, read_next_field)
end
