-- w3.lua: workload W3 (ARCHITECTURE.md), full GET of random 64 KiB low-latency parts (2000 files).
--
--   wrk -t2 -c16 -d10s --latency -s loadtest/wrk/w3.lua http://127.0.0.1:8080 -- [COUNT] [SIZE]
--
-- COUNT (2000) is the number of files /w3/part%04d.m4s, SIZE (65536) their size in
-- bytes: lower them for a smaller generated set. Every response must be 200
-- with a SIZE-byte body; others are counted as unexpected and reported by
-- done(), with a RESULT line that loadtest/compare.sh reads.
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "common.lua")

common.define({
  name = "W3",
  build = function(args)
    return common.files("/w3/part%04d.m4s", common.num(args, 1, 2000)), 200, common.num(args, 2, 65536)
  end,
})
