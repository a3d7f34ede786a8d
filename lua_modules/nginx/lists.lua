-- nginx.lists: nginx's lists of upstream values as arrays.
--
--   local split = lists.splitter("integer")
--   split("502, 200")            --> { 502, 200 }
--   split("502, 504 : 200")      --> { 502, 504, 200 }
--   split("-, 200")              --> { "-", "200" }
--   split("200")                 --> { 200 }: a message holds an array of one
--                                    as that one value
--
-- nginx writes one value per upstream server tried, separated by ", ", and
-- starts a new group after an internal redirect (X-Accel-Redirect,
-- error_page) with " : " (ngx_http_upstream.c). The groups are flattened:
-- an array holds the values in the order nginx wrote them. A message's
-- array has one type, so a list with a value that is not a number (a "-"
-- for a server that gave no status) is an array of strings, as written.
-- Each splitter reuses one array for every line (inject_message copies it);
-- with integers = true a number list is returned as { value = array,
-- value_type = 2 }.

local find, sub, tonumber = string.find, string.sub, tonumber

local lists = {}

function lists.splitter(kind, integers)
  local array = {}
  local typed = { value = array, value_type = 2 }
  return function(text)
    local count, from = 0, 1
    while true do
      local at, after = find(text, ", ", from, true)
      local group, group_end = find(text, " : ", from, true)
      if group and (not at or group < at) then at, after = group, group_end end
      count = count + 1
      if not at then
        array[count] = sub(text, from)
        break
      end
      array[count] = sub(text, from, at - 1)
      from = after + 1
    end
    for k = count + 1, #array do array[k] = nil end
    if kind == "string" then return array end
    for k = 1, count do
      if not tonumber(array[k]) then return array end
    end
    for k = 1, count do array[k] = tonumber(array[k]) end
    if integers and kind == "integer" then return typed end
    return array
  end
end

return lists
