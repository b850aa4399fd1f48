-- wrk script for `make bench`.
--   wrk ... -s wrk.lua URL -- get <expected status>
--   wrk ... -s wrk.lua URL -- move <csrf token> <file of POST paths> <cell order>
-- "move" sends request i to game (i mod n) at ply (i div n), playing the cell the
-- order gives for that ply: every POST lands on a game that accepts it, because
-- the previous ply of the same game was sent n requests earlier.
-- done() prints one JSON line: "BENCH {...}" for the runner to parse.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  mode = args[1]
  unexpected = 0
  -- the first unexpected answer, for the report: status, page title, reason
  first_unexpected = ""
  -- wrk calls request() once on thread 1 before the run, to check that it
  -- builds a valid request (wrk.c: script_verify_request), and never sends that
  -- one: start at -1 so the first request sent is index 0. Starting at 0 lost
  -- the first game's first ply, and its second ply got a 409 (stale move).
  index = -1
  if mode == "move" then
    expected = 302
    token = args[2]
    paths = {}
    for line in io.lines(args[3]) do
      table.insert(paths, line)
    end
    order = args[4]
  else
    expected = tonumber(args[2])
  end
end

function request()
  if mode ~= "move" then
    return wrk.request()
  end
  local count = #paths
  local path = paths[(index % count) + 1]
  local ply = math.floor(index / count)
  index = index + 1
  local cell = tonumber(order:sub(ply + 1, ply + 1)) or 0
  local body = string.format(
    "csrfmiddlewaretoken=%s&row=%d&col=%d&ply=%d",
    token, math.floor(cell / 3), cell % 3, ply
  )
  return wrk.format("POST", path, nil, body)
end

function response(status, headers, body)
  if status ~= expected then
    unexpected = unexpected + 1
    if first_unexpected == "" then
      local text = body or ""
      local reason = text:match('role="alert">([^<]*)<') or text:sub(1, 200)
      local title = text:match("<title>([^<]*)</title>") or ""
      first_unexpected = status .. " [" .. title .. "] " .. reason
    end
  end
end

function done(summary, latency, requests)
  local unexpected_total = 0
  for _, thread in ipairs(threads) do
    unexpected_total = unexpected_total + thread:get("unexpected")
  end
  for _, thread in ipairs(threads) do
    local first = thread:get("first_unexpected")
    if first ~= "" then
      io.write("UNEXPECTED " .. first:gsub("%s+", " ") .. "\n")
    end
  end
  local errors = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "unexpected": %d, ' ..
    '"socket_errors": %d, "p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, unexpected_total,
    errors.connect + errors.read + errors.write + errors.timeout,
    latency:percentile(50), latency:percentile(99)
  ))
end
