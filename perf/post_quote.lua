-- post_quote.lua -- wrk script: POST /v1/orders/quote-calculate, one line
-- (6 units of one wine, box_units 6, to DE): routing over the wine's
-- candidates with landed cost (duties, VAT, freight), nothing written.
--
-- Usage: wrk ... -s perf/post_quote.lua http://HOST:PORT -- WINE_ID
-- The key is WM_ORDER_KEY (a key of the seller); non-200 answers show in
-- report.lua's BENCH_RESULT line (non2xx).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

local body
local headers = { ["Content-Type"] = "application/json",
                  ["Authorization"] = "Bearer " .. (os.getenv("WM_ORDER_KEY") or "") }

function init(args)
   local wine = args[1] or error("post_quote.lua needs the wine id: -- WINE_ID")
   body = string.format('{"destination_country":"DE","lines":[{"sku":"%s","qty":6,"box_units":6}]}', wine)
end

function request()
   return wrk.format("POST", "/v1/orders/quote-calculate", headers, body)
end
