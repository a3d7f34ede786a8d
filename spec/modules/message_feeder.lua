-- Decoder for the specs (sandbox_host.lua): each record is the Lua source of
-- one message table ("return {...}"), injected as it is, so an encoder under
-- test reads a real message that inject_message made.
function process_message(source)
  inject_message(assert(loadstring(source))())
  return 0
end
