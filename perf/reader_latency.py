#!/usr/bin/python3
"""
reader_latency.py -- one reader's latency, every request timed (make bench,
section a2).

wrk's figures for a single connection do not add up: with -c1 it reported
84,882 requests in 10 s beside a mean latency of 7.3 ms and a p99 of
~290 ms, which one connection cannot have.  So the -c1 row says nothing
about stalls.  This probe sends GETs of the ids in IDS_FILE, one after
another, over one keep-alive connection for SECONDS. It times each request
on its own clock and prints a line bench.sh parses:

    READER_LAT requests=N rps=R p50_us=.. p99_us=.. p999_us=.. max_us=.. over_10ms=K non2xx=M

    perf/reader_latency.py HOST:PORT KEY IDS_FILE [SECONDS]

The probe runs in Python, so each figure includes ~50-100 us of its own.
That matters for p50. It does not hide a stall of milliseconds. Loopback
only: the address comes from bench.sh.
"""
import http.client
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: reader_latency.py HOST:PORT KEY IDS_FILE [SECONDS]")
    host, port = sys.argv[1].rsplit(":", 1)
    if not host.startswith("127."):
        sys.exit("reader_latency.py: loopback addresses only")
    key = sys.argv[2]
    with open(sys.argv[3]) as f:
        ids = [line.strip() for line in f if line.strip()]
    if not ids:
        sys.exit("reader_latency.py: no ids")
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    headers = {"Authorization": "Bearer " + key}
    lat, non2xx, i = [], 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        conn.request("GET", "/v1/partners/" + ids[i % len(ids)], headers=headers)
        r = conn.getresponse()
        r.read()
        lat.append(time.perf_counter() - t0)
        non2xx += not (200 <= r.status < 300)
        i += 1
    elapsed = time.perf_counter() - start
    lat.sort()
    n = len(lat)

    def us(q):
        return int(lat[min(n - 1, int(n * q))] * 1e6)

    print(f"READER_LAT requests={n} rps={n / elapsed:.1f} p50_us={us(0.5)} p99_us={us(0.99)} "
          f"p999_us={us(0.999)} max_us={int(lat[-1] * 1e6)} over_10ms={sum(x > 0.01 for x in lat)} non2xx={non2xx}")


if __name__ == "__main__":
    main()
