-- get_partner.lua -- wrk script: GET /v1/partners/{id}, cycling through ids.
--
-- Usage: wrk ... -s perf/get_partner.lua http://HOST:PORT -- IDS_FILE
-- IDS_FILE holds one partner id per line (written by perf/bench.sh after
-- seeding).  Each wrk thread starts at a different offset so threads do not
-- walk the same ids in lockstep; every id is requested, in order, round robin.
-- The key comes from the environment variable WM_BENCH_KEY.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

local paths = {}
-- every read is authenticated (and audited): WM_BENCH_KEY is set by bench.sh
local headers = { ["Authorization"] = "Bearer " .. (os.getenv("WM_BENCH_KEY") or "") }
local pos = 0
local threads_made = 0  -- main state only (setup)

function setup(thread)
   thread:set("tid", threads_made)  -- becomes the global tid in that thread
   threads_made = threads_made + 1
end

function init(args)
   local file = args[1] or error("get_partner.lua: ids file argument missing (-- IDS_FILE)")
   for line in io.lines(file) do
      if line ~= "" then paths[#paths + 1] = "/v1/partners/" .. line end
   end
   if #paths == 0 then error("get_partner.lua: no ids in " .. file) end
   pos = ((tid or 0) * 997) % #paths
end

function request()
   pos = pos % #paths + 1
   return wrk.format("GET", paths[pos], headers)
end
