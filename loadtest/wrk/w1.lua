-- w1.lua: workload W1 (ARCHITECTURE.md), full GET of random 2 MiB segments (200 files).
--
--   wrk -t2 -c16 -d10s --latency -s loadtest/wrk/w1.lua http://127.0.0.1:8080 -- [COUNT] [SIZE]
--
-- COUNT (200) is the number of files /w1/seg%03d.m4s, SIZE (2097152) their size in
-- bytes: lower them for a smaller generated set. Every response must be 200
-- with a SIZE-byte body; others are counted as unexpected and reported by
-- done(), with a RESULT line that loadtest/compare.sh reads.
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "common.lua")

common.define({
  name = "W1",
  build = function(args)
    return common.files("/w1/seg%03d.m4s", common.num(args, 1, 200)), 200, common.num(args, 2, 2097152)
  end,
})
