-- w6.lua: workload W6 (ARCHITECTURE.md), conditional GETs of 1 KiB playlists and
-- 64 KiB parts carrying the server's current validator: a CDN revalidating.
--
--   wrk -t2 -c16 -d10s --latency -s loadtest/wrk/w6.lua http://127.0.0.1:8080 -- VALIDATORS
--
-- VALIDATORS is a file written by loadtest/lib.sh (lt_validators), one line
-- per file: "PATH<TAB>HEADER<TAB>VALUE", HEADER being If-None-Match with the
-- ETag the server sent, or If-Modified-Since with its Last-Modified when it
-- sends no ETag (net/http's FileServer and fasthttp.FS). Every response must
-- be 304 with no body; others are counted as unexpected and reported by
-- done(), with a RESULT line that loadtest/compare.sh reads.
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "common.lua")

common.define({
  name = "W6",
  build = function(args)
    local path = args and args[1]
    if path == nil or path == "" then error("W6 needs the validators file as its argument") end
    local f = assert(io.open(path, "r"))
    local reqs = {}
    for line in f:lines() do
      local target, header, value = line:match("^([^\t]+)\t([^\t]+)\t(.+)$")
      if target then
        reqs[#reqs + 1] = wrk.format("GET", target, { [header] = value })
      end
    end
    f:close()
    if #reqs == 0 then error("no validators in " .. path) end
    return reqs, 304, 0
  end,
})
