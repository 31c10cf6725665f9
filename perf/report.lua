-- report.lua -- shared wrk done() hook for perf/bench.sh.
--
-- wrk's human output mixes units (us/ms/s); bench.sh needs one parseable
-- line per run, so this prints
--   BENCH_RESULT rps=<req/s> p50_us=<n> p99_us=<n> requests=<n> non2xx=<n> errors=<n>
-- after wrk's own report.  Used directly as the -s script for plain GETs
-- (/healthz, nginx baseline) and loaded by the other perf/*.lua scripts.
function done(summary, latency, requests)
   local secs = summary.duration / 1e6
   local e = summary.errors
   io.write(string.format(
      "BENCH_RESULT rps=%.1f p50_us=%d p99_us=%d requests=%d non2xx=%d errors=%d\n",
      summary.requests / secs, latency:percentile(50), latency:percentile(99),
      summary.requests, e.status, e.connect + e.read + e.write + e.timeout))
end
