#!/usr/bin/python3
"""
repl_lag.py -- replication lag under a steady catalogue write rate (make
bench, section m; DESIGN.md 9 "Replication").

A writer POSTs partners straight to the catalogue home (signed with the
cluster secret, as a router would, so the answer carries X-WM-LSN, the
write's position) at RATE writes per second for SECONDS; a reader polls
shard 1's signed /internal/cluster/status as fast as it can and notes when
its applied position from the home first reaches each LSN.  The lag of a
write = the time shard 1 first showed it applied minus the time the home
acknowledged it (durable).  Printed: writes, achieved rate, lag p50/p99/max
(ms), and how often the reader sampled (its resolution).

    perf/repl_lag.py HOME_ADDR SHARD1_ADDR SECRET_FILE OPERATOR_KEY [RATE] [SECONDS]

Loopback only (the addresses come from bench.sh's own map).
"""
import hashlib
import hmac
import http.client
import json
import sys
import threading
import time


def sign(secret, method, target, body):
    t = str(int(time.time()))
    msg = "\n".join([method, target, t, hashlib.sha256(body).hexdigest()]).encode()
    return "t=%s,v1=%s" % (t, hmac.new(secret, msg, hashlib.sha256).hexdigest())


def conn(addr):
    host, port = addr.rsplit(":", 1)
    assert host.startswith("127."), "loopback only"
    return http.client.HTTPConnection(host, int(port), timeout=10)


def main():
    home, shard1, secret_file, key = sys.argv[1:5]
    rate = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
    seconds = float(sys.argv[6]) if len(sys.argv) > 6 else 5.0
    secret = open(secret_file, "rb").read().rstrip(b"\n")
    acked = []          # (lsn, ack time)
    applied = []        # (time, applied lsn) samples
    done = threading.Event()

    def reader():
        c = conn(shard1)
        target = "/internal/cluster/status"
        while not done.is_set():
            c.request("GET", target, headers={"X-WM-Signature": sign(secret, "GET", target, b"")})
            r = c.getresponse()
            body = json.loads(r.read())
            now = time.monotonic()
            for p in body.get("replication", []):
                if p.get("publisher") == 0:
                    applied.append((now, p.get("applied_lsn", 0)))

    th = threading.Thread(target=reader)
    th.start()
    c = conn(home)
    n = 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        due = start + n / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        body = json.dumps({"legal_name": "Lag %d" % n, "country": "AT", "roles": ["seller"]}).encode()
        c.request("POST", "/v1/partners", body=body,
                  headers={"Authorization": "Bearer " + key, "Content-Type": "application/json",
                           "X-WM-Signature": sign(secret, "POST", "/v1/partners", body)})
        r = c.getresponse()
        r.read()
        t = time.monotonic()
        lsn = r.getheader("X-WM-LSN")
        if r.status == 201 and lsn:
            acked.append((int(lsn), t))
        n += 1
    elapsed = time.monotonic() - start
    time.sleep(0.5)
    done.set()
    th.join()
    lags, j = [], 0
    for lsn, t in acked:
        while j < len(applied) and applied[j][1] < lsn:
            j += 1
        if j == len(applied):
            break
        lags.append(max(0.0, applied[j][0] - t) * 1000)
    lags.sort()
    if not lags:
        print("REPL_LAG no samples (writes=%d)" % n)
        return 1
    q = lambda f: lags[min(len(lags) - 1, int(f * len(lags)))]
    gaps = [b[0] - a[0] for a, b in zip(applied, applied[1:])]
    res = sum(gaps) / len(gaps) * 1000 if gaps else 0
    print("REPL_LAG writes=%d rate=%.0f/s lag_p50_ms=%.2f lag_p99_ms=%.2f lag_max_ms=%.2f reader_resolution_ms=%.2f"
          % (len(acked), len(acked) / elapsed, q(0.5), q(0.99), lags[-1], res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
