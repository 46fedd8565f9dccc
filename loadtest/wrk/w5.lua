-- w5.lua: workload W5 (ARCHITECTURE.md), many idle keep-alive connections while W1
-- runs. Two ways to run it:
--
-- 1. Idle connections from a helper, W1 load from wrk (what compare.sh does):
--
--      go run ./loadtest/client -url http://127.0.0.1:8080 -sessions 0 -idle 5000 -duration 20s &
--      wrk -t2 -c16 -d10s --latency -s loadtest/wrk/w5.lua http://127.0.0.1:8080
--
-- 2. wrk alone, with a huge connection count at a low rate: DELAY_MS makes
--    every connection wait that long before each request, so most of them
--    sit idle at any moment (2000 connections, 1 s apart: 2000 req/s):
--
--      wrk -t2 -c2000 -d10s --latency -s loadtest/wrk/w5.lua http://127.0.0.1:8080 -- 200 2097152 1000
--
-- COUNT (200) and SIZE (2097152) are W1's files; DELAY_MS defaults to 0.
-- Every response must be 200 with a SIZE-byte body.
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "common.lua")

common.define({
  name = "W5",
  build = function(args)
    delay_ms = common.num(args, 3, 0)
    return common.files("/w1/seg%03d.m4s", common.num(args, 1, 200)), 200, common.num(args, 2, 2097152)
  end,
})

-- wrk decides whether to call delay() from the script as loaded, so it is
-- always defined; with DELAY_MS 0 it costs a zero-length timer per request.
function delay()
  return delay_ms
end
