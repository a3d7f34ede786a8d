-- Encoder: the message's Payload as is (an empty record when it has none).
-- The output adds the record separator (newline).
--
-- inject_message_value writes the Payload from the message's own bytes:
-- `return read_message("Payload")` made a Lua string of every record,
-- interned and later swept, only to be copied into the output (callgrind,
-- W1 lines to a file: 3,040 instructions a line in all, now 1,900).

function process_message()
  inject_message_value("Payload")
  return 0
end
