#!/usr/bin/python3
"""
declare_common.py -- add to api/openapi.json what every operation shares, so
a new route cannot be documented without it (issue 21 item 9).

Why: the edge (400/411/413/414/431/503), the key layer (401/403/429 with
Retry-After and the RateLimit headers), the disk (507 on writes), the
conditional-write layer (412 and If-Match on writes to a resource with a
GET route, ETag on resource reads) and the server (X-Request-Id on every
response) answer for every operation; writing those by hand on 80
operations is how the document drifted.  This script declares them as
$ref'd components and is idempotent: run it after adding or merging routes,
then `make test` (tests/test_openapi.c checks the result, the contract
checker checks the service against it).  It also declares the bodies of
the public operations and the page bound of every list (maxItems 200 =
API_PAGE_MAX).  The resource a write acts on is found as engine/edge/etag.c
finds it (write_target).

    /usr/bin/python3 tests/contract/declare_common.py api/openapi.json
"""
import json, collections, sys
P=sys.argv[1] if len(sys.argv) > 1 else 'api/openapi.json'
d=json.load(open(P), object_pairs_hook=collections.OrderedDict)
comp=d['components']
H=lambda n: {"$ref":"#/components/headers/"+n}
comp['headers']=collections.OrderedDict([
 ("X-Request-Id",{"description":"The request's id, also in the access log line of this request; quote it when reporting a problem. Sent on every response.","required":True,"schema":{"type":"string","minLength":1,"maxLength":64}}),
 ("RateLimit",{"description":"draft-ietf-httpapi-ratelimit-headers: the calling key's bucket, `\"key\";r=<requests left now>;t=<seconds until the bucket is full>`. Sent on every response to a request whose key was identified.","schema":{"type":"string"}}),
 ("RateLimit-Policy",{"description":"draft-ietf-httpapi-ratelimit-headers: the calling key's policy, `\"key\";q=<burst>;w=<window seconds>`.","schema":{"type":"string"}}),
 ("Retry-After",{"description":"Seconds to wait before retrying (RFC 9110 section 10.2.3).","schema":{"type":"integer","minimum":0}}),
 ("Idempotent-Replayed",{"description":"`true` when this is the stored response of an earlier request with the same `Idempotency-Key`, not a new execution.","schema":{"type":"string","enum":["true"]}}),
 ("ETag",{"description":"Strong entity tag of the resource's representation as this caller sees it (RFC 9110 section 8.8.3). Send it back in `If-Match` to make a write conditional.","schema":{"type":"string","pattern":"^\"[!#-~]+\"$"}}),
])
XRID={"X-Request-Id":H("X-Request-Id")}
PROB={"application/problem+json":{"schema":{"$ref":"#/components/schemas/Problem"}}}
resp=comp['responses']
resp['Problem']['headers']=collections.OrderedDict([("X-Request-Id",H("X-Request-Id")),("Retry-After",H("Retry-After"))])
resp['Problem']['description']="RFC 9457 problem. `Retry-After` comes with 409 `idempotency_in_flight`."
resp['OrderFailed']['headers']=dict(XRID)
def pr(desc, extra=None):
    r=collections.OrderedDict([("description",desc),("headers",collections.OrderedDict(XRID))])
    if extra: r['headers'].update(extra)
    r['content']=json.loads(json.dumps(PROB))
    return r
resp['BadRequest']=pr("Malformed request: the edge's HTTP parser (bad request line or header, a request without `Host` or with two, `Transfer-Encoding` other than chunked), or the route (malformed JSON, a bad query parameter or cursor, a bad `Idempotency-Key`).")
resp['Unauthorized']=pr("No key, or an unknown, revoked or expired key (`unauthorized`).")
resp['Forbidden']=pr("The key lacks the operation's scope, or the partner's onboarding state or roles do not allow the action (`forbidden`, `insufficient_scope`, ...).")
resp['TooManyRequests']=pr("The key is over its request rate (`rate_limited`) or its record quota (`quota_exceeded`): wait `Retry-After` seconds. The problem does not reveal whether more rows exist.",
    collections.OrderedDict([("Retry-After",dict(H("Retry-After"))),("RateLimit",H("RateLimit")),("RateLimit-Policy",H("RateLimit-Policy"))]))
resp['TooManyRequests']['headers']['Retry-After']={"$ref":"#/components/headers/Retry-After","required":True} if False else {"description":"Seconds to wait before retrying.","required":True,"schema":{"type":"integer","minimum":0}}
resp['PayloadTooLarge']=pr("The body is over the edge's limit (`--max-body`, checked from `Content-Length` before the body is read: `payload_too_large`), or the JSON is over the parser's bounds (`json_too_large`).")
resp['LengthRequired']=pr("The request carried `Transfer-Encoding` (chunked request bodies are not accepted): send `Content-Length` (`length_required`).")
resp['UriTooLong']=pr("The request target is over the edge's limit (`uri_too_long`).")
resp['HeadersTooLarge']=pr("The request head or the number of header fields is over the edge's limit (`headers_too_large`).")
resp['PreconditionFailed']=pr("`If-Match` does not match the resource's current `ETag` (`precondition_failed`): it changed since it was read; nothing was written.")
resp['ServiceUnavailable']=pr("Not ready (recovery running), out of memory for this request, or the connection table is full (`too_many_connections`, with `Retry-After`).",
    {"Retry-After":H("Retry-After")})
resp['InsufficientStorage']=pr("The data directory's disk is full: writes are refused (`insufficient_storage`) until space returns; reads keep working. Retry after `Retry-After` seconds.",
    {"Retry-After":{"description":"Seconds to wait before retrying.","required":True,"schema":{"type":"integer","minimum":0}}})
comp['parameters']['IfMatch']={"name":"If-Match","in":"header","required":False,
  "description":"Make the write conditional (RFC 9110 section 13.1.1): one or more strong entity tags from `ETag`, or `*` (any existing resource). When none matches the resource's current tag the answer is 412 `precondition_failed` and nothing is written. Weak tags never match. Ignored when the resource does not exist or is not visible (the 404 is answered).",
  "schema":{"type":"string","maxLength":1024}}

METHODS=('get','put','post','patch','delete')
routes=[]
for p,item in d['paths'].items():
    for m,op in item.items():
        if m in METHODS: routes.append((m,p))
gets={p for m,p in routes if m=='get'}
def ends_param(p): return p.endswith('}')
def target(m,p):
    """(kind, get pattern) like engine/edge/etag.c write_target"""
    if p in gets and not ends_param(p):
        for g in gets:
            if g.startswith(p+'/{') and '/' not in g[len(p)+1:]: return ('create',g)
        return (None,None)
    q=p
    while True:
        if ends_param(q) and q in gets: return ('resource',q)
        i=q.rfind('/')
        if i<=0: return (None,None)
        q=q[:i]

def add(resps, code, ref):
    if code not in resps:
        resps[code]={"$ref":"#/components/responses/"+ref}
def sort_resps(resps):
    items=sorted(resps.items(), key=lambda kv: (kv[0]!='default', kv[0]))
    resps.clear(); resps.update(items)

for m,p in routes:
    op=d['paths'][p][m]
    resps=op['responses']
    auth=bool(op.get('security'))
    write=m!='get'
    params=op.setdefault('parameters',[])
    has_idem=any(x.get('$ref','').endswith('/IdempotencyKey') for x in params)
    kind,tg=target(m,p) if write else (None,None)
    # statuses every operation can answer
    add(resps,'400','BadRequest'); add(resps,'411','LengthRequired'); add(resps,'413','PayloadTooLarge'); add(resps,'414','UriTooLong')
    add(resps,'431','HeadersTooLarge'); add(resps,'503','ServiceUnavailable')
    if auth:
        add(resps,'401','Unauthorized'); add(resps,'403','Forbidden')
        resps['429']={"$ref":"#/components/responses/TooManyRequests"}
    if write:
        add(resps,'507','InsufficientStorage')
    if write and kind=='resource':
        add(resps,'412','PreconditionFailed')
        if not any(x.get('$ref','').endswith('/IfMatch') for x in params):
            params.append({"$ref":"#/components/parameters/IfMatch"})
    for code,r in list(resps.items()):
        if '$ref' in r: continue
        hd=r.setdefault('headers',collections.OrderedDict())
        hd['X-Request-Id']=H('X-Request-Id')
        if code.startswith('2'):
            if auth:
                for hn in ('RateLimit','RateLimit-Policy'):
                    hd[hn]={"description":comp['headers'][hn]['description'],"required":True,"schema":{"type":"string"}}
            if has_idem or (write and p=='/v1/orders'):
                hd['Idempotent-Replayed']=H('Idempotent-Replayed')
                ct=r.setdefault('content',collections.OrderedDict())
                if 'application/problem+json' not in ct:
                    ct['application/problem+json']={"schema":{"$ref":"#/components/schemas/Problem"}}
                if 'idempotent_response_not_stored' not in r.get('description',''):
                    r['description']=r.get('description','')+" -- or, on a replay whose stored body was not kept (a secret shown once, or over 256 KiB), this status with a problem body `idempotent_response_not_stored`."
            if m=='get' and '{' in p and code=='200':
                hd['ETag']=dict(H('ETag')); hd['ETag']={"description":comp['headers']['ETag']['description'],"required":True,"schema":comp['headers']['ETag']['schema']}
            elif write and kind:
                hd['ETag']=H('ETag')
    if not params: del op['parameters']
    sort_resps(resps)

# public operations' bodies
def setjson(p,m,code,schema,desc=None):
    r=d['paths'][p][m]['responses'][code]
    r['content']={"application/json":{"schema":schema}}
    if desc: r['description']=desc
STORAGE={"type":"string","enum":["ok","low","full"],"description":"The data directory's space: `ok`; `low` when the WAL's spare segment cannot be made (writes go on until the current segment fills); `full` while writes are refused with 507"}
setjson('/healthz','get','200',{"type":"object","required":["status","storage"],"properties":{"status":{"const":"ok"},"storage":STORAGE},"additionalProperties":False})
setjson('/readyz','get','200',{"type":"object","required":["status","lsn","storage"],"properties":{"status":{"const":"ready"},"lsn":{"type":"integer","minimum":0,"description":"Last LSN recovered or written"},"storage":STORAGE},"additionalProperties":False})
setjson('/v1/openapi.json','get','200',{"type":"object","required":["openapi","info","paths"],"properties":{"openapi":{"type":"string"},"info":{"type":"object"},"paths":{"type":"object"}}},"This document (OpenAPI 3.1)")
r=d['paths']['/v1/admin/snapshots']['post']['responses']['202']
r.setdefault('content',collections.OrderedDict())['application/json']=({"schema":{"type":"object","required":["status","lsn"],"properties":{"status":{"enum":["started","already_running"]},"lsn":{"type":"integer","minimum":0,"description":"The LSN the snapshot is consistent at"}},"additionalProperties":False}})
# lists: a page holds at most page_size <= 200 rows
def walk(o):
    if isinstance(o,dict):
        pp=o.get('properties')
        if isinstance(pp,dict) and 'data' in pp and 'has_more' in pp and pp['data'].get('type')=='array':
            pp['data']['maxItems']=200
        for v in o.values(): walk(v)
    elif isinstance(o,list):
        for v in o: walk(v)
walk(d)
s=json.dumps(d,indent=1,ensure_ascii=False)+"\n"
open(P,'w').write(s)
