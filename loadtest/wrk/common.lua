-- common.lua: the half that loadtest/wrk/w1.lua ... w5.lua share. Each of
-- them loads this file and calls define() with its workload; define() sets
-- wrk's hooks (setup, init, request, response, done) as globals.
--
-- Each wrk thread runs its own Lua state, so counters are per thread:
-- setup() keeps every thread's handle, and done() (in the main state) sums
-- the threads' counters with thread:get().
--
-- Defining response() makes wrk buffer each body and pass it to Lua; that
-- costs the client a copy per body, the same for every server, and is what
-- lets the scripts check the status and the body length of every response.
-- With WRK_NOCHECK=1 in the environment, init() drops response() so wrk
-- skips that work: then only wrk's own counts (socket errors, status > 399)
-- and the bytes per response remain to tell a wrong answer.

local M = {}

nocheck = os.getenv("WRK_NOCHECK") == "1"

-- define sets the wrk hooks for workload w:
--   w.name          "W1" ...
--   w.build(args)   returns a list of request strings, the expected status
--                   and the expected body length, from the script's
--                   arguments (after "--")
function M.define(w)
  local threads = {}

  function setup(thread)
    table.insert(threads, thread)
    thread:set("id", #threads)
  end

  function init(args)
    math.randomseed(os.time() * 1009 + (id or 0) * 7919)
    reqs, want_status, want_len = w.build(args)
    nreqs = #reqs
    responses, bad_status, bad_length = 0, 0, 0
    first_bad = ""
    if nocheck then
      response = nil -- wrk then neither parses headers nor buffers bodies
    end
  end

  function request()
    return reqs[math.random(nreqs)]
  end

  function response(status, headers, body)
    responses = responses + 1
    if status ~= want_status then
      bad_status = bad_status + 1
      if first_bad == "" then
        first_bad = string.format("status %d, want %d", status, want_status)
      end
    elseif #body ~= want_len then
      bad_length = bad_length + 1
      if first_bad == "" then
        first_bad = string.format("body %d bytes, want %d", #body, want_len)
      end
    end
  end

  function done(summary, latency, requests)
    local n, st, len, first = 0, 0, 0, ""
    for _, t in ipairs(threads) do
      n = n + (t:get("responses") or 0)
      st = st + (t:get("bad_status") or 0)
      len = len + (t:get("bad_length") or 0)
      if first == "" then first = t:get("first_bad") or "" end
    end
    local e = summary.errors
    local sockerr = e.connect + e.read + e.write + e.timeout
    local secs = summary.duration / 1e6
    if nocheck then
      io.write(string.format("%s: responses not checked (WRK_NOCHECK=1); status > 399: %d\n", w.name, e.status))
      st = e.status
    else
      io.write(string.format("%s: %d responses checked, %d unexpected (%d status, %d length)%s\n",
        w.name, n, st + len, st, len, first ~= "" and ("; first: " .. first) or ""))
    end
    io.write(string.format(
      "RESULT workload=%s requests=%d bytes=%d seconds=%.3f rps=%.1f mibps=%.2f p50_us=%d p90_us=%d p99_us=%d p999_us=%d unexpected=%d socket_errors=%d checked=%d\n",
      w.name, summary.requests, summary.bytes, secs, summary.requests / secs,
      summary.bytes / secs / 1048576, latency:percentile(50), latency:percentile(90),
      latency:percentile(99), latency:percentile(99.9), st + len, sockerr, nocheck and 0 or 1))
  end
end

-- files builds one GET per file: pattern takes the index 0 .. count-1.
function M.files(pattern, count)
  local reqs = {}
  for i = 0, count - 1 do
    reqs[#reqs + 1] = wrk.format("GET", string.format(pattern, i))
  end
  return reqs
end

-- num returns args[i] as a number, or def when absent.
function M.num(args, i, def)
  local v = args and args[i]
  if v == nil or v == "" then return def end
  local n = tonumber(v)
  if n == nil then error(string.format("argument %d: %q is not a number", i, v)) end
  return n
end

return M
