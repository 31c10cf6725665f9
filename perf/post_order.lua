-- post_order.lua -- wrk script: POST /v1/orders, one new order per request
-- (1 unit of one wine, box_units 12, to DE, a consumer with an address), so
-- every request runs the whole flash buy-sell saga: capture (quote engine,
-- stock-backed ATP), hold, sandbox charge, confirm, source, commit buy,
-- reserved -- one WAL transaction per step, the response sent when the
-- last is durable.
--
-- Usage: wrk ... -s perf/post_order.lua http://HOST:PORT -- WINE_ID [WINE_ID2]
-- With a second wine the order has two lines (1 unit of each): two legs,
-- which bench.sh (section n) places on two shards.
-- The key is WM_ORDER_KEY (a key of the seller).  Besides report.lua's
-- BENCH_RESULT line, done() prints
--   ORDER_RESULT created=<201s> other=<non-201 responses> first_other=<status>
-- counted in response() over every thread, so bench.sh can insist that
-- every order was created (wrk's own non2xx only counts status >= 400).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")
local report_done = done

local threads = {}  -- main state only (setup / done)
local body
local headers = { ["Content-Type"] = "application/json",
                  ["Authorization"] = "Bearer " .. (os.getenv("WM_ORDER_KEY") or "") }
created, other, first_other = 0, 0, 0  -- per thread (globals: read by thread:get)

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   local wine = args[1] or error("post_order.lua needs the wine id: -- WINE_ID")
   local lines = string.format('{"sku":"%s","qty":1,"box_units":12}', wine)
   if args[2] then
      lines = lines .. string.format(',{"sku":"%s","qty":1,"box_units":12}', args[2])
   end
   -- a consumer per order: the volume caps (data/caps.tsv) count one consumer's orders
   head = '{"channel":"webshop_connect","destination_country":"DE",' ..
      '"consumer":{"name":"Erika Mustermann","email":"erika+'
   tail = string.format('@example.de",' ..
      '"address":{"line1":"Weinstrasse 1","city":"Berlin","postal_code":"10115"}},' ..
      '"lines":[%s]}', lines)
   seq = 0
end

function request()
   seq = seq + 1
   return wrk.format("POST", "/v1/orders", headers, head .. tostring(seq) .. "." .. tostring(math.random(1, 1e9)) .. tail)
end

-- WM_ORDER_MAX=N: each thread stops after N answers (a burst of a known size)
local max_answers = tonumber(os.getenv("WM_ORDER_MAX") or "")

function response(status, hdrs, resp_body)
   if max_answers and created + other + 1 >= max_answers then
      wrk.thread:stop()
   end
   if status == 201 then
      created = created + 1
   else
      other = other + 1
      if first_other == 0 then first_other = status end
   end
end

function done(summary, latency, requests)
   report_done(summary, latency, requests)
   local c, o, f = 0, 0, 0
   for _, t in ipairs(threads) do
      c = c + t:get("created")
      o = o + t:get("other")
      if f == 0 then f = t:get("first_other") end
   end
   io.write(string.format("ORDER_RESULT created=%d other=%d first_other=%d\n", c, o, f))
end
