-- Encoder: the message's Payload as is (an empty string when it has none).
-- The output adds the record separator (newline).

function process_message()
  return read_message("Payload") or ""
end
