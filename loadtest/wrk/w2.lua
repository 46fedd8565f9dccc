-- w2.lua: workload W2 (ARCHITECTURE.md), Range GET of random 256 KiB-aligned spans of
-- one 256 MiB file, /w2/big.mp4 (what a player or a CDN slice fetch asks).
--
--   wrk -t2 -c16 -d10s --latency -s loadtest/wrk/w2.lua http://127.0.0.1:8080 -- [SIZE] [SPAN]
--
-- SIZE (268435456) is the file's size and SPAN (262144) the span, in bytes;
-- SIZE should be a multiple of SPAN. Every response must be 206 with a
-- SPAN-byte body; others are counted as unexpected and reported by done(),
-- with a RESULT line that loadtest/compare.sh reads.
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "common.lua")

common.define({
  name = "W2",
  build = function(args)
    local size = common.num(args, 1, 268435456)
    local span = common.num(args, 2, 262144)
    local reqs = {}
    for first = 0, size - span, span do
      reqs[#reqs + 1] = wrk.format("GET", "/w2/big.mp4",
        { Range = string.format("bytes=%d-%d", first, first + span - 1) })
    end
    return reqs, 206, span
  end,
})
