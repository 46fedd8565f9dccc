-- w4.lua: workload W4 (ARCHITECTURE.md), full GET of random 1 KiB playlists (10 files).
--
--   wrk -t2 -c16 -d10s --latency -s loadtest/wrk/w4.lua http://127.0.0.1:8080 -- [COUNT] [SIZE]
--
-- COUNT (10) is the number of files /w4/p%02d.m3u8, SIZE (1024) their size in
-- bytes: lower them for a smaller generated set. Every response must be 200
-- with a SIZE-byte body; others are counted as unexpected and reported by
-- done(), with a RESULT line that loadtest/compare.sh reads.
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "common.lua")

common.define({
  name = "W4",
  build = function(args)
    return common.files("/w4/p%02d.m3u8", common.num(args, 1, 10)), 200, common.num(args, 2, 1024)
  end,
})
