-- GET load for the read API (wrk). Arguments after `--`: <path> [<keys file> <first key> <threads>].
-- Keys are used like real clients use them: each key for 100 consecutive requests, then the next one (thread t of
-- T takes keys first + t, first + t + T, ...), so no key reaches the per-key limit (120 a minute) and the
-- service writes lastUsedAt (once a minute per key) for 1 % of the requests, as for any client making 100
-- requests. The runner passes `first` past the keys earlier runs used. Every request also sends its own
-- X-Forwarded-For (8,192 addresses per thread, round robin): with TRUST_PROXY=127.0.0.1/32 the per-IP limit
-- sees that many clients, each far below 120 a minute. Both limits are checked on every request.
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
end

function request()
  local headers = {
    ["X-Forwarded-For"] = string.format("10.%d.%d.%d", 100 + tid, math.floor(counter / 256) % 32, counter % 256),
  }
  if #keys > 0 then
    local index = first + math.floor(counter / PER_KEY) * nthreads + tid
    headers["Authorization"] = keys[index % #keys + 1]
  end
  counter = counter + 1
  return wrk.format("GET", path, headers)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
