-- GET load for the read API (wrk). Arguments after `--`: <path> [<keys file> <first key> <threads> [<must contain>
-- [<cookie>]]] (an empty keys file: no Authorization header).
-- Keys are used like real clients use them: each key for 100 consecutive requests, then the next one (thread t of
-- T takes keys first + t, first + t + T, ...), so no key reaches the per-key limit (120 a minute) and the
-- service writes lastUsedAt (once a minute per key) for 1 % of the requests, as for any client making 100
-- requests. The runner passes `first` past the keys earlier runs used. Every request also sends its own
-- X-Forwarded-For (8,192 addresses per thread, round robin): with TRUST_PROXY=127.0.0.1/32 the per-IP limit
-- sees that many clients, each far below 120 a minute. Both limits are checked on every request.
-- With <must contain>, every response is checked: one that is not a 200 whose body contains that text (a redirect
-- to sign-in, a 404, an error page) is counted as failed; done() adds "checked" and "failedChecks". Without it
-- response() is removed in init, so wrk does not hand bodies to Lua (no cost for the plain runs).
-- <cookie> is sent as the Cookie header (the console's session).
-- done() prints one line: BENCH_JSON {...} with counts and latency percentiles in microseconds.

local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local PER_KEY = 100
local path = "/"
local keys = {}
local counter = 0
local first = 0
local nthreads = 1
-- Globals: done() runs in wrk's main Lua state (where init never ran) and reads them from each thread.
mustContain = nil
local cookie = nil
checked = 0
failedChecks = 0

function init(args)
  path = args[1] or "/"
  local file = args[2]
  if file ~= nil and file ~= "" then
    for line in io.lines(file) do
      if line ~= "" then keys[#keys + 1] = "Bearer " .. line end
    end
  end
  first = tonumber(args[3]) or 0
  nthreads = tonumber(args[4]) or 1
  if args[5] ~= nil and args[5] ~= "" then mustContain = args[5] else response = nil end
  if args[6] ~= nil and args[6] ~= "" then cookie = args[6] end
end

function request()
  local headers = {
    ["X-Forwarded-For"] = string.format("10.%d.%d.%d", 100 + tid, math.floor(counter / 256) % 32, counter % 256),
  }
  if #keys > 0 then
    local index = first + math.floor(counter / PER_KEY) * nthreads + tid
    headers["Authorization"] = keys[index % #keys + 1]
  end
  if cookie ~= nil then headers["Cookie"] = cookie end
  counter = counter + 1
  return wrk.format("GET", path, headers)
end

function response(status, headers, body)
  checked = checked + 1
  if status ~= 200 or body == nil or string.find(body, mustContain, 1, true) == nil then
    failedChecks = failedChecks + 1
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local checks = ""
  if #threads > 0 and threads[1]:get("mustContain") ~= nil then
    local c, f = 0, 0
    for _, t in ipairs(threads) do
      c = c + (t:get("checked") or 0)
      f = f + (t:get("failedChecks") or 0)
    end
    checks = string.format(',"checked":%d,"failedChecks":%d', c, f)
  end
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f}%s}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean, checks))
end
