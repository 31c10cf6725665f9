-- post_quote.lua -- wrk script: POST /v1/orders/quote-calculate, one line
-- (6 units of one wine, box_units 6, to DE): routing over the wine's
-- candidates with landed cost (duties, VAT, freight), nothing written.
--
-- Usage: wrk ... -s perf/post_quote.lua http://HOST:PORT -- WINE_ID [WINE_ID...]
-- One line per wine given (section k: 1 line and 5 lines, 10 candidate
-- offers per wine).
-- The key is WM_ORDER_KEY (a key of the seller); non-200 answers show in
-- report.lua's BENCH_RESULT line (non2xx).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

local body
local headers = { ["Content-Type"] = "application/json",
                  ["Authorization"] = "Bearer " .. (os.getenv("WM_ORDER_KEY") or "") }

function init(args)
   if not args[1] then error("post_quote.lua needs a wine id: -- WINE_ID [WINE_ID...]") end
   local lines = {}
   for i, wine in ipairs(args) do
      lines[i] = string.format('{"sku":"%s","qty":6,"box_units":6}', wine)
   end
   body = '{"destination_country":"DE","lines":[' .. table.concat(lines, ",") .. ']}'
end

function request()
   return wrk.format("POST", "/v1/orders/quote-calculate", headers, body)
end
