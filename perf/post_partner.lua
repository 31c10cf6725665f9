-- post_partner.lua -- wrk script: POST /v1/partners with a unique legal name
-- per request, so every request is a new durable record (one WAL transaction).
--
-- Usage: wrk ... -s perf/post_partner.lua http://HOST:PORT [-- RUN_TAG]
-- Names are "Bench Write <RUN_TAG>-<thread>-<n>"; RUN_TAG defaults to the
-- start time so repeated runs against one data dir stay unique too.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

local threads_made = 0  -- main state only (setup)
local tag
local n = 0
local headers = { ["Content-Type"] = "application/json",
                  ["Authorization"] = "Bearer " .. (os.getenv("WM_BENCH_KEY") or "") }

function setup(thread)
   thread:set("tid", threads_made)  -- becomes the global tid in that thread
   threads_made = threads_made + 1
end

function init(args)
   tag = (args[1] or tostring(os.time())) .. "-" .. tostring(tid or 0)
end

function request()
   n = n + 1
   local body = string.format(
      '{"legal_name":"Bench Write %s-%d","country":"FR","roles":["originator"],"originator_type":"estate"}',
      tag, n)
   return wrk.format("POST", "/v1/partners", headers, body)
end
