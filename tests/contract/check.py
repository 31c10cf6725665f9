#!/usr/bin/python3
"""
check.py -- the contract test: every response the integration suite received
is checked against api/openapi.json.

Why: the OpenAPI document is the whole truth about the service (DESIGN.md
section 7), and a document maintained by hand drifts from the code the day
nobody looks.  tests/harness.c records every response a test reads (when
WM_CONTRACT_DIR is set, one JSON line per response in <dir>/resp-<pid>.jsonl,
see the top of harness.c); after the Criterion run this script matches each
recorded response to its operation (path template and method) and checks

  - the status is declared for the operation (or the operation has `default`),
  - the content type is one the declared response lists (no body when the
    response declares no content),
  - a JSON body is valid against the declared schema, with an independent
    JSON Schema 2020-12 validator (jsonschema's Draft202012Validator, from
    the Debian package python3-jsonschema; OpenAPI 3.1 schemas are 2020-12,
    $ref resolved against the document),
  - every header the declared response marks `required` is present,
  - the document itself: every $ref resolves, every component schema is
    valid JSON Schema 2020-12 (checked first),
  - every 4xx and 5xx is application/problem+json valid against Problem,
    and every response carries X-Request-Id -- these two also for responses
    whose request the harness did not build (raw-socket tests record
    method and path as null).

It prints each distinct violation once (operation, status, the first schema
error, the first test that saw it, how many responses repeated it) and exits
1 when there is any, 2 on a usage error or when nothing was recorded (a run
that checked nothing must not pass; `--allow-empty` says a filtered run may
legitimately make no HTTP request: make test passes it with TEST_ARGS).

`check.py --self-test api/openapi.json` proves the checker can fail: it feeds
it hand-made responses that break each rule (and one that keeps them all)
and exits non-zero unless each broken one is reported and the good one is
not.  `make test` runs the self-test, then the check.

Run with /usr/bin/python3: the `python3` first on PATH may be an interpreter
without Debian's modules.
"""
import decimal
import glob
import json
import os
import re
import sys
import warnings

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:  # pragma: no cover - told to the operator, not hidden
    sys.stderr.write("contract: python3-jsonschema is missing (run .ci/deps build)\n")
    sys.exit(2)

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# Limits as data: how many distinct violations are printed in full.
MAX_PRINTED = 200

# Violations known to be fixed on another branch of the same issue, as
# (status, the start of the violation text, raw requests only, why).  They
# are printed as KNOWN, not counted; one that no longer occurs is reported so
# that the entry is removed.  Keep this list empty whenever possible.
KNOWN = []  # the accept path's 503 without X-Request-Id was fixed by the net/ branch (issue 21 item 4)


def jload(text):
    """JSON with every non-integer number as an exact Decimal: money and
    coordinates are decimals, and `multipleOf: 0.01` must hold for 33.33
    (binary floating point says 33.33 / 0.01 is not an integer)."""
    return json.loads(text, parse_float=decimal.Decimal)


def is_json_type(ct):
    return ct == "application/json" or ct.endswith("+json")


class Contract:
    """The document, its operations as (method, compiled path regex,
    template, operation), and a $ref resolver over the whole document."""

    def __init__(self, doc):
        self.doc = doc
        self.ops = []
        for tmpl, item in doc.get("paths", {}).items():
            rx = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(tmpl)) + "$"
            for m, op in item.items():
                if m in METHODS:
                    self.ops.append((m.upper(), re.compile(rx), tmpl, op))
        # Literal templates before templated ones, so /v1/orders/quote-calculate
        # is not taken for /v1/orders/{id}.
        self.ops.sort(key=lambda o: o[2].count("{"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
        self.validators = {}

    def deref(self, obj):
        """Follow a local $ref (responses, headers) to its target."""
        seen = 0
        while isinstance(obj, dict) and "$ref" in obj and seen < 16:
            ref = obj["$ref"]
            if not ref.startswith("#/"):
                raise ValueError("non-local $ref " + ref)
            cur = self.doc
            for part in ref[2:].split("/"):
                cur = cur[part.replace("~1", "/").replace("~0", "~")]
            obj = cur
            seen += 1
        return obj

    def match(self, method, path):
        """(template, operation) for the request, or (template, None) when the
        path exists but not the method, or (None, None)."""
        if method == "HEAD":
            method = "GET"
        tmpl_known = None
        for m, rx, tmpl, op in self.ops:
            if rx.match(path):
                if m == method:
                    return tmpl, op
                tmpl_known = tmpl_known or tmpl
        return tmpl_known, None

    def first_error(self, schema, instance):
        key = json.dumps(schema, sort_keys=True)
        v = self.validators.get(key)
        if v is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                v = Draft202012Validator(schema, resolver=self.resolver)
            self.validators[key] = v
        # best_match descends into anyOf/oneOf to the most relevant error
        e = jsonschema.exceptions.best_match(v.iter_errors(instance))
        if e is None:
            return None
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        msg = e.message
        if len(msg) > 240:
            msg = msg[:240] + "..."
        return "at %s: %s (schema %s)" % (where, msg, "/".join(str(p) for p in e.absolute_schema_path))


def check_document(c):
    """The document's own faults: a $ref that resolves to nothing, or a
    schema that is not valid JSON Schema 2020-12.  A list of messages."""
    out = []

    def refs(o, where):
        if isinstance(o, dict):
            r = o.get("$ref")
            if isinstance(r, str):
                try:
                    c.deref({"$ref": r})
                except (KeyError, ValueError, TypeError):
                    out.append("%s: $ref %s resolves to nothing" % (where, r))
            for k, v in o.items():
                refs(v, where + "/" + k)
        elif isinstance(o, list):
            for i, v in enumerate(o):
                refs(v, "%s/%d" % (where, i))

    refs(c.doc, "#")
    for name, sch in c.doc.get("components", {}).get("schemas", {}).items():
        try:
            Draft202012Validator.check_schema(sch)
        except jsonschema.exceptions.SchemaError as e:
            out.append("components/schemas/%s is not valid JSON Schema 2020-12: %s" % (name, e.message))
    return out


def parse_head(head):
    """Header names (lower case) -> value; the first of repeated names wins."""
    hdrs = {}
    for line in head.split("\r\n")[1:]:
        if ":" in line:
            n, v = line.split(":", 1)
            hdrs.setdefault(n.strip().lower(), v.strip())
    return hdrs


def check_one(c, rec):
    """The violations of one recorded response, as (operation, status, what)."""
    out = []
    status = rec["status"]
    hdrs = parse_head(rec.get("head", ""))
    ct_full = hdrs.get("content-type", "")
    ct = ct_full.split(";")[0].strip().lower()
    body = rec.get("body", "").encode("latin-1")
    method, raw = rec.get("method"), rec.get("path")
    path = raw.split("?", 1)[0] if raw else None
    tmpl, op = c.match(method, path) if method and path else (None, None)
    opname = "%s %s" % (method, tmpl) if op is not None else "%s %s" % (method or "?", raw or "(raw request)")

    def bad(what):
        out.append((opname, status, what))

    if "x-request-id" not in hdrs:
        bad("no X-Request-Id header")
    if status >= 400:
        if ct != "application/problem+json":
            bad("a %d must be application/problem+json, got %r" % (status, ct_full or "(none)"))
        else:
            try:
                err = c.first_error({"$ref": "#/components/schemas/Problem"}, jload(body))
                if err:
                    bad("problem body: " + err)
            except ValueError as e:
                bad("problem body is not JSON: %s" % e)
    if op is None:
        return out
    responses = op.get("responses", {})
    decl = responses.get(str(status)) or responses.get("%dXX" % (status // 100)) or responses.get("default")
    if decl is None:
        bad("status %d is not declared (declared: %s)" % (status, ", ".join(sorted(responses))))
        return out
    decl = c.deref(decl)
    for hname, h in (decl.get("headers") or {}).items():
        h = c.deref(h)
        if h.get("required") and hname.lower() not in hdrs:
            bad("required header %s is missing" % hname)
    content = decl.get("content") or {}
    if not content:
        if body:
            bad("the declared response has no content but %d bytes came (%s)" % (len(body), ct_full))
        return out
    media = content.get(ct)
    if media is None:
        for k, v in content.items():  # wildcards such as image/*
            if k.endswith("/*") and ct.startswith(k[:-1]) or k == "*/*":
                media = v
                break
    if media is None:
        bad("content type %r is not declared (declared: %s)" % (ct_full or "(none)", ", ".join(sorted(content))))
        return out
    schema = media.get("schema")
    if schema is None or not is_json_type(ct):
        return out
    if method == "HEAD":
        return out
    try:
        inst = jload(body)
    except ValueError as e:
        bad("body is not JSON: %s" % e)
        return out
    err = c.first_error(schema, inst)
    if err:
        bad("body: " + err)
    return out


def load_records(d):
    recs = []
    for fn in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
        with open(fn, encoding="ascii") as f:
            for ln, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    recs.append(json.loads(line))
                except ValueError as e:
                    sys.stderr.write("contract: %s:%d: unreadable record: %s\n" % (fn, ln, e))
    return recs


def known(rec, status, what):
    """The index in KNOWN of the entry this violation is, or None."""
    for i, (st, text, raw_only, _why) in enumerate(KNOWN):
        if st == status and what.startswith(text) and (not raw_only or not rec.get("method")):
            return i
    return None


def run(c, recs, quiet=False):
    """Check every record; print distinct violations.  Returns the number of
    distinct violations."""
    seen = {}
    order = []
    known_seen = set()
    for r in recs:
        for opname, status, what in check_one(c, r):
            k = known(r, status, what)
            if k is not None:
                known_seen.add(k)
                continue
            key = (opname, status, what)
            if key not in seen:
                seen[key] = [r.get("test", "?"), 0]
                order.append(key)
            seen[key][1] += 1
    if not quiet:
        for i, k in enumerate(KNOWN):
            print("contract: KNOWN %s: %d %s (%s)" % ("seen" if i in known_seen else
                                                       "not seen in this run (once a full run no longer shows it, remove it)",
                                                       k[0], k[1], k[3]))
        for i, key in enumerate(order):
            if i == MAX_PRINTED:
                print("contract: ... %d more distinct violations" % (len(order) - MAX_PRINTED))
                break
            test, n = seen[key]
            print("contract: VIOLATION %s -> %d: %s [test %s%s]" % (key[0], key[1], key[2], test,
                                                                   ", %d responses" % n if n > 1 else ""))
    return len(order)


def self_test(c):
    """The checker must report each hand-made wrong response and pass a right
    one.  Returns 0 when it does."""
    ok_head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: t\r\n"
    prob_head = "HTTP/1.1 404 Not Found\r\nContent-Type: application/problem+json\r\nX-Request-Id: t\r\n"
    prob = '{"type":"about:blank","title":"Not Found","status":404,"code":"not_found"}'
    good = [
        {"test": "good/problem", "method": "GET", "path": "/v1/partners/p_x", "status": 404,
         "head": prob_head, "body": prob},
        {"test": "good/raw-problem", "method": None, "path": None, "status": 404, "head": prob_head,
         "body": prob},
    ]
    wrong = [
        ("undeclared status", {"method": "GET", "path": "/v1/partners/p_x", "status": 418,
                               "head": prob_head.replace("404 Not Found", "418 Teapot"), "body": prob}),
        ("4xx as application/json", {"method": "GET", "path": "/v1/partners/p_x", "status": 404,
                                     "head": ok_head.replace("200 OK", "404 Not Found"), "body": prob}),
        ("problem without code", {"method": None, "path": None, "status": 404, "head": prob_head,
                                  "body": '{"type":"about:blank","title":"x","status":404}'}),
        ("no X-Request-Id", {"method": "GET", "path": "/v1/partners/p_x", "status": 404,
                             "head": prob_head.replace("X-Request-Id: t\r\n", ""), "body": prob}),
        ("body breaks the schema", {"method": "GET", "path": "/v1/partners/p_x", "status": 200,
                                    "head": ok_head, "body": '{"id":17}'}),
        ("undeclared content type", {"method": "GET", "path": "/v1/partners/p_x", "status": 200,
                                     "head": ok_head.replace("application/json", "text/plain"),
                                     "body": "hello"}),
        ("body that is not JSON", {"method": "GET", "path": "/v1/partners/p_x", "status": 200,
                                   "head": ok_head, "body": "{"}),
    ]
    failed = 0
    for r in good:
        v = check_one(c, r)
        if v:
            print("contract self-test: FAIL: a right response was reported: %s" % (v,))
            failed += 1
    for name, r in wrong:
        r["test"] = "self-test/" + name
        if not check_one(c, r):
            print("contract self-test: FAIL: not reported: %s" % name)
            failed += 1
    if check_document(c):
        print("contract self-test: FAIL: the document itself has faults (run the check to see them)")
        failed += 1
    broken = Contract({"paths": {}, "components": {"schemas": {
        "A": {"$ref": "#/components/schemas/Missing"}, "B": {"type": "no-such-type"}}}})
    if len(check_document(broken)) != 2:
        print("contract self-test: FAIL: a dangling $ref and an invalid schema were not both reported")
        failed += 1
    print("contract self-test: %d wrong responses reported, %d right ones passed, broken document reported, "
          "%d failures" % (len(wrong), len(good), failed))
    return failed


def main(argv):
    allow_empty = "--allow-empty" in argv
    argv = [a for a in argv if a != "--allow-empty"]
    if len(argv) == 3 and argv[1] == "--self-test":
        with open(argv[2], encoding="utf-8") as f:
            c = Contract(jload(f.read()))
        return 1 if self_test(c) else 0
    if len(argv) != 3:
        sys.stderr.write("usage: check.py [--allow-empty] api/openapi.json RECORD_DIR | "
                         "check.py --self-test api/openapi.json\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        c = Contract(jload(f.read()))
    doc_faults = check_document(c)
    for m in doc_faults:
        print("contract: DOCUMENT %s" % m)
    if doc_faults:
        return 1
    recs = load_records(argv[2])
    if not recs:
        print("contract: no responses recorded in %s: nothing was checked" % argv[2])
        return 0 if allow_empty else 2
    n = run(c, recs)
    ops = set()
    for r in recs:
        if r.get("method") and r.get("path"):
            t, op = c.match(r["method"], r["path"].split("?", 1)[0])
            if op is not None:
                ops.add((r["method"], t))
    print("contract: %d responses checked (%d operations seen of %d documented): %d distinct violations" %
          (len(recs), len(ops), len(c.ops), n))
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
