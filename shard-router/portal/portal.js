/*
 * portal.js -- the partner portal (issue 19): one page, no framework, no
 * third-party code, nothing stored.
 *
 * Why this shape: the portal must do nothing a partner's own code cannot,
 * so every action is a call of the public API on this origin with
 * `Authorization: Bearer <key>`; the key lives in the variable `session`
 * only (never in web storage or a cookie: tests/test_portal.c checks the
 * script names neither), so a reload signs out.  The page is served under a strict Content-Security-Policy (no
 * inline script or style): every handler is bound here, and a CSP
 * violation is recorded into #csp-violations, which the browser test reads.
 *
 * Errors from the API are problem+json: `detail` goes to the alert region
 * and each `errors[]` entry next to the form field whose data-for names it.
 */
"use strict";

(function () {
  var session = null; /* {key, me (ApiKey), partner} -- memory only */
  var ORDER_STATES = ["placed", "paid", "confirmed", "sourced", "reserved"];
  var STATUS_ORDER = ["applied", "verified", "roles_enabled", "configured", "integrated", "live"];
  /* What each step is, who takes it, and what the service opens at it:
   * the statuses of the action policy (engine/edge/policy.c). */
  var STEPS = [
    {name: "Apply", by: "you", what: "The partner record: legal entity, country, contact, payout details.",
     unlocks: "Reading and updating your record, listing your keys, reading your events."},
    {name: "Verify", by: "the platform", what: "Identity and payout verification by the payment provider.",
     unlocks: "Minting keys, webhooks, reading wines, offers, listings, inventory and orders."},
    {name: "Enable roles", by: "the platform", what: "Originator, Fulfiller and/or Seller are granted.",
     unlocks: "Writing your role's data: wines and offers (originator), listings (seller), inventory."},
    {name: "Configure", by: "you", what: "Permissions (originator), channels and shelf prices (seller), fulfilment (fulfiller).",
     unlocks: "Integration."},
    {name: "Integrate", by: "you", what: "Keys, webhook endpoints, the first wine, offer and listing.",
     unlocks: "The go-live review."},
    {name: "Go live", by: "the platform", what: "The publish gate; your first order.",
     unlocks: "Creating orders (seller)."}
  ];
  /* The first status each part of the portal needs (engine/edge/policy.c). */
  var OPEN_FROM = {mint: "verified", webhooks: "verified", catalogue: "verified", orders: "verified",
                   order: "live"};
  function opened(what) {
    var at = STATUS_ORDER.indexOf(session.partner.status);
    return at >= 0 && at >= STATUS_ORDER.indexOf(OPEN_FROM[what]);
  }
  function hasScope(s) { return !!session.me && (session.me.scopes || []).indexOf(s) >= 0; }
  /* Show on page why it is closed; 1 when it is. */
  function locked(page, what, scope) {
    var note = $(page + "-locked"), why = "";
    if (!opened(what)) why = "Opens at onboarding status " + OPEN_FROM[what] + " (the partner is " + session.partner.status + ").";
    else if (scope && !hasScope(scope)) why = "This key lacks the scope " + scope + ".";
    note.textContent = why;
    note.hidden = !why;
    return !!why;
  }
  /* Each capability flag and the roles that allow it (Capabilities in
   * api/openapi.json: 422 requires_role otherwise). */
  var CAPS = [["provides_wine_data", ["originator"]], ["provides_inventory", ["originator"]],
              ["permissions", ["originator"]], ["fulfills_orders", ["originator", "fulfiller"]],
              ["feeds_unoffered_wines", ["fulfiller"]], ["creates_orders", ["seller"]],
              ["curates_offers", ["seller"]], ["sets_shelf_price", ["seller"]]];
  var PAGES = ["signin", "onboarding", "roles", "keys", "webhooks", "catalogue", "order"];

  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function idemKey() {
    var a = new Uint8Array(16);
    crypto.getRandomValues(a);
    return "portal-" + Array.prototype.map.call(a, function (b) { return (b + 256).toString(16).slice(1); }).join("");
  }

  /* CSP violations are recorded where the test can read them. */
  document.addEventListener("securitypolicyviolation", function (ev) {
    var p = $("csp-violations");
    if (!p) return;
    p.dataset.count = String(Number(p.dataset.count || "0") + 1);
    p.textContent = "CSP violation: " + ev.violatedDirective + " " + (ev.blockedURI || "");
    p.hidden = false;
  });

  /* ---- messages ---------------------------------------------------------- */

  function showAlert(text, ok) {
    var a = $("alert");
    a.textContent = text;
    a.className = ok ? "alert ok" : "alert";
    a.hidden = false;
  }
  function hideAlert() { $("alert").hidden = true; }

  function clearErrors(form) {
    form.querySelectorAll(".ferr").forEach(function (p) { p.textContent = ""; });
    form.querySelectorAll("[aria-invalid]").forEach(function (i) { i.removeAttribute("aria-invalid"); });
  }

  /* Show a problem: detail on top, each field error next to its field
   * (`lines[0].sku` and `lines.0.sku` name the same field). */
  function showProblem(res, form) {
    var p = res.data || {};
    var detail = p.detail || p.title || ("HTTP " + res.status);
    showAlert((p.code ? p.code + ": " : "") + detail);
    if (!form || !Array.isArray(p.errors)) return;
    var unplaced = [];
    p.errors.forEach(function (e) {
      var name = String(e.field || "");
      var dotted = name.replace(/\[(\d+)\]/g, ".$1");
      var slot = null;
      form.querySelectorAll(".ferr").forEach(function (s) {
        var f = s.dataset.for || "";
        if (!slot && (f === name || f.replace(/\[(\d+)\]/g, ".$1") === dotted)) slot = s;
      });
      var input = form.querySelector('[name="' + dotted.replace(/"/g, "") + '"]');
      if (input) input.setAttribute("aria-invalid", "true");
      var msg = (e.rule ? e.rule + ": " : "") + (e.message || "");
      if (slot) slot.textContent = slot.textContent ? slot.textContent + "; " + msg : msg;
      else unplaced.push(name + ": " + msg);
    });
    if (unplaced.length) showAlert((p.code ? p.code + ": " : "") + detail + " (" + unplaced.join("; ") + ")");
  }

  /* ---- the API ------------------------------------------------------------ */

  /* One call of the public API on this origin; resolves {status, data}. */
  function api(method, path, body, key) {
    var h = {"Authorization": "Bearer " + (key || (session && session.key) || ""), "Accept": "application/json"};
    var init = {method: method, headers: h, credentials: "omit", cache: "no-store", redirect: "error"};
    if (method !== "GET") {
      h["Content-Type"] = "application/json";
      h["Idempotency-Key"] = idemKey();
      init.body = toJson(body || {});
    }
    return fetch(path, init).then(function (r) {
      return r.text().then(function (t) {
        var data = null;
        try { data = t ? JSON.parse(t) : null; } catch (e) { data = {detail: t}; }
        return {status: r.status, ok: r.ok, data: data};
      });
    }, function (err) {
      return {status: 0, ok: false, data: {detail: "the request failed: " + err.message}};
    });
  }

  /* Money is exact decimal text, never a binary float: formBody marks a
   * decimal field's text, and toJson writes it into the JSON unquoted,
   * digit for digit as typed. */
  var DECIMAL = "\u0000decimal:";
  function toJson(body) {
    return JSON.stringify(body).replace(/"\\u0000decimal:(-?\d+(?:\.\d+)?)"/g, "$1");
  }

  /* The JSON body of a form: names with dots nest ("producer.name",
   * "lines.0.sku" makes an array), empty and disabled fields are left
   * out, data-type says how to convert (int, decimal, bool, list). */
  function formBody(form) {
    var out = {};
    form.querySelectorAll("input[name], select[name]").forEach(function (i) {
      var t = i.dataset.type || "", v;
      if (i.disabled) return;
      if (t === "bool") v = i.checked;
      else {
        v = i.value.trim();
        if (v === "") return;
        if (t === "int") v = /^-?\d+$/.test(v) ? parseInt(v, 10) : v;
        else if (t === "decimal") v = /^-?\d+(\.\d+)?$/.test(v) ? DECIMAL + v : v;
        else if (t === "list") v = v.split(",").map(function (s) { return s.trim(); }).filter(Boolean);
      }
      var parts = i.name.split("."), o = out;
      for (var k = 0; k < parts.length - 1; k++) {
        var next = /^\d+$/.test(parts[k + 1]) ? [] : {};
        if (o[parts[k]] === undefined) o[parts[k]] = next;
        o = o[parts[k]];
      }
      o[parts[parts.length - 1]] = v;
    });
    return out;
  }

  /* Submit a form as one API call; on success run done(data). */
  function bindForm(id, method, pathFn, done) {
    var form = $(id);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      clearErrors(form);
      hideAlert();
      var btn = form.querySelector("button[type=submit]");
      btn.disabled = true;
      var body = formBody(form);
      api(method, typeof pathFn === "function" ? pathFn(body) : pathFn, body).then(function (res) {
        btn.disabled = false;
        if (!res.ok) { showProblem(res, form); return; }
        done(res.data, form);
      });
    });
  }

  function copyFrom(inputId, button) {
    var v = $(inputId).value;
    var ok = function () { button.textContent = "Copied"; };
    if (navigator.clipboard && navigator.clipboard.writeText)
      navigator.clipboard.writeText(v).then(ok, function () { $(inputId).select(); button.textContent = "Press Ctrl+C"; });
    else { $(inputId).select(); button.textContent = "Press Ctrl+C"; }
  }

  /* ---- pages --------------------------------------------------------------- */

  function show(page) {
    if (!session) page = "signin";
    if (PAGES.indexOf(page) < 0) page = "onboarding";
    PAGES.forEach(function (p) { $("page-" + p).hidden = p !== page; });
    document.querySelectorAll("nav a").forEach(function (a) {
      if (a.getAttribute("href") === "#" + page) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    });
    hideAlert();
    document.body.dataset.page = page;
    var loader = LOADERS[page];
    var p = loader ? loader() : Promise.resolve();
    Promise.resolve(p).then(function () { document.body.dataset.loaded = page; });
  }
  function route() { show(location.hash.replace(/^#/, "") || "onboarding"); }

  /* A list with cursor paging: state per list, the table's rows built by
   * cells(row) (an array of strings or nodes). */
  var lists = {};
  function pagedList(name, path, cells, filter) {
    var st = lists[name] = lists[name] || {cursor: null, next: null};
    var q = path + (path.indexOf("?") < 0 ? "?" : "&") + "page_size=20" +
      (st.cursor ? "&cursor=" + encodeURIComponent(st.cursor) : "");
    return api("GET", q).then(function (res) {
      var tb = $(name + "-table").tBodies[0];
      clear(tb);
      if (!res.ok) { showProblem(res); return; }
      var rows = (res.data.data || []).filter(filter || function () { return true; });
      var heads = Array.prototype.map.call($(name + "-table").tHead.rows[0].cells, function (th) { return th.textContent; });
      rows.forEach(function (r) {
        var tr = el("tr");
        if (r.id) tr.dataset.id = r.id;
        cells(r).forEach(function (c, i) {
          var td = el("td");
          if (heads[i]) td.dataset.label = heads[i];
          if (c instanceof Node) td.appendChild(c); else td.textContent = c === null || c === undefined ? "" : String(c);
          tr.appendChild(td);
        });
        tb.appendChild(tr);
      });
      if (!rows.length) {
        var tr = el("tr"), td = el("td", "none");
        td.colSpan = $(name + "-table").tHead.rows[0].cells.length;
        tr.appendChild(td);
        tb.appendChild(tr);
      }
      st.next = res.data.next_cursor || null;
      var nb = $(name + "-next");
      if (nb) nb.disabled = !st.next;
      return res.data;
    });
  }
  function bindPager(name, reload) {
    $(name + "-first").addEventListener("click", function () { lists[name] = {cursor: null, next: null}; reload(); });
    $(name + "-next").addEventListener("click", function () {
      if (lists[name] && lists[name].next) { lists[name].cursor = lists[name].next; reload(); }
    });
  }

  /* onboarding */
  function loadOnboarding() {
    return refreshPartner().then(function () {
      var p = session.partner, at = STATUS_ORDER.indexOf(p.status);
      $("onb-status").textContent = p.status;
      var ol = $("onb-steps");
      clear(ol);
      STEPS.forEach(function (s, i) {
        var li = el("li", null, i <= at ? "done" : i === at + 1 ? "current" : "todo");
        li.id = "step-" + (i + 1);
        li.appendChild(el("strong", s.name));
        li.appendChild(document.createTextNode(" (" + s.by + ") - " + (i <= at ? "done. " : i === at + 1 ? "next. " : "to do. ")));
        li.appendChild(document.createTextNode(s.what + " Unlocks: " + s.unlocks));
        if (i === at + 1 && s.by === "the platform")
          li.appendChild(el("p", "Waiting for the platform to complete this step.", "note"));
        ol.appendChild(li);
      });
      if (p.status === "suspended")
        ol.appendChild(el("li", "The partner is suspended: the platform moves it back to verified.", "current"));
      return checklist();
    });
  }
  /* One checklist question: null when this key or status may not ask it. */
  function ask(scope, what, path, test) {
    if (!hasScope(scope) || (what && !opened(what))) return Promise.resolve(null);
    return api("GET", path).then(function (r) { return r.ok ? test(r.data.data || []) : null; });
  }
  function checklist() {
    var me = session.partner.id, ul = $("onb-checklist");
    clear(ul);
    var items = [
      ["Partner record created", Promise.resolve(true)],
      ["Payout identity verified", Promise.resolve(STATUS_ORDER.indexOf(session.partner.status) >= 1)],
      ["Roles enabled", Promise.resolve(STATUS_ORDER.indexOf(session.partner.status) >= 2 && (session.partner.roles || []).length > 0)],
      ["Credentials issued (keys)", ask("read:keys", null, "/api/keys?page_size=1", function (d) { return d.length > 0; })],
      ["Webhooks subscribed", ask("read:webhooks", "webhooks", "/v1/webhook-endpoints?page_size=1", function (d) { return d.length > 0; })],
      ["First offer created", ask("read:offers", "catalogue", "/v1/offers?page_size=200", function (d) {
        return d.some(function (o) { return o.originator_id === me; }); })],
      ["First listing created", ask("read:listings", "catalogue", "/v1/listings?page_size=200", function (d) {
        return d.some(function (l) { return l.seller_id === me; }); })],
      ["A test order end to end", ask("read:orders", "orders", "/v1/orders?page_size=1", function (d) { return d.length > 0; })]
    ];
    return Promise.all(items.map(function (it) { return it[1]; })).then(function (vals) {
      items.forEach(function (it, i) {
        var v = vals[i];
        ul.appendChild(el("li", it[0] + (v === null ? ": not yet open to this key or status" : v ? ": done" : ": not yet"),
                          v ? "done" : "todo"));
      });
    });
  }

  /* roles */
  function loadRoles() {
    return refreshPartner().then(function () {
      var p = session.partner;
      $("roles-list").textContent = (p.roles || []).length ? p.roles.join(", ") : "none yet";
      var box = $("caps-boxes");
      clear(box);
      CAPS.forEach(function (cr) {
        var c = cr[0], allowed = cr[1].some(function (r) { return (p.roles || []).indexOf(r) >= 0; });
        var d = el("div", null, "field check"), i = el("input"),
            l = el("label", c + (allowed ? "" : " (needs the " + cr[1].join(" or ") + " role)"));
        i.type = "checkbox"; i.id = "cap-" + c; i.name = "capabilities." + c; i.dataset.type = "bool";
        i.checked = !!(p.capabilities && p.capabilities[c]);
        i.disabled = !allowed;
        l.htmlFor = i.id;
        d.appendChild(i); d.appendChild(l);
        box.appendChild(d);
      });
    });
  }

  /* keys */
  function keyActions(k) {
    var d = el("div");
    if (k.revoked_at) return d;
    var nameIn = el("input", null, "k-name"), exIn = el("input", null, "k-expiry"), rn = el("button", "Rename", "k-rename"),
        ex = el("button", "Set expiry", "k-setexp"), rv = el("button", "Revoke", "danger k-revoke");
    nameIn.value = k.name || ""; nameIn.setAttribute("aria-label", "New name for key " + k.prefix);
    exIn.value = k.expires_at || ""; exIn.placeholder = "2030-01-01T00:00:00Z";
    exIn.setAttribute("aria-label", "Expiry (UTC) for key " + k.prefix + ", empty for none");
    [rn, ex, rv].forEach(function (b) { b.type = "button"; });
    rn.addEventListener("click", function () { patchKey(k.id, {name: nameIn.value || null}); });
    ex.addEventListener("click", function () { patchKey(k.id, {expires_at: exIn.value.trim() || null}); });
    rv.addEventListener("click", function () {
      if (rv.dataset.armed !== "1") { rv.dataset.armed = "1"; rv.textContent = "Confirm revoke"; return; }
      api("POST", "/api/keys/" + encodeURIComponent(k.id) + "/revoke", {}).then(function (r) {
        if (!r.ok) return showProblem(r);
        loadKeys().then(function () { showAlert("Key " + k.prefix + " revoked.", true); });
      });
    });
    [nameIn, rn, exIn, ex, rv].forEach(function (x) { d.appendChild(x); });
    return d;
  }
  function patchKey(id, body) {
    api("PATCH", "/api/keys/" + encodeURIComponent(id), body).then(function (r) {
      if (!r.ok) return showProblem(r);
      loadKeys().then(function () { showAlert("Key updated.", true); });
    });
  }
  function loadKeys() {
    var canMint = hasScope("write:keys") && opened("mint");
    $("mint-form").hidden = !canMint;
    $("keys-mint-denied").hidden = !!canMint;
    return pagedList("keys", "/api/keys", function (k) {
      return [k.name || "", k.prefix, k.kind, k.expires_at || "never",
              k.revoked_at ? "revoked" : k.id === session.me.id ? "active (this session)" : "active", keyActions(k)];
    });
  }

  /* webhooks */
  function loadWebhooks() {
    $("whe-form").hidden = !hasScope("write:webhooks");
    if (locked("webhooks", "webhooks", "read:webhooks")) { $("whe-form").hidden = true; return Promise.resolve(); }
    return pagedList("whe", "/v1/webhook-endpoints", function (w) {
      var b = el("button", "Deliveries", "secondary");
      b.type = "button";
      b.setAttribute("aria-label", "Deliveries and dead letters of " + w.url);
      b.addEventListener("click", function () { loadDlq(w); });
      return [w.url, (w.event_types || []).join(", "), w.status + (w.disabled_reason ? " (" + w.disabled_reason + ")" : ""), b];
    });
  }
  var dlqEndpoint = null;
  function loadDeliveries() {
    var path = "/v1/webhook-endpoints/" + encodeURIComponent(dlqEndpoint.id);
    return pagedList("deliv", path + "/deliveries", function (d) {
      return [d.event_type, d.status, d.attempts, d.last_error || d.last_status || "", d.created_at];
    });
  }
  function loadDlq(w) {
    if (!dlqEndpoint || dlqEndpoint.id !== w.id) lists.deliv = lists.dlq = null;
    dlqEndpoint = w;
    $("dlq").hidden = false;
    $("dlq-title").textContent = "Deliveries of " + w.url;
    var path = "/v1/webhook-endpoints/" + encodeURIComponent(w.id);
    loadDeliveries();
    return pagedList("dlq", path + "/dead-letters", function (d) {
      var b = el("button", "Replay", "secondary");
      b.type = "button";
      b.addEventListener("click", function () { replay(path, {delivery_id: d.id}); });
      return [d.event_type, d.attempts, d.last_error || d.last_status || "", d.created_at, b];
    });
  }
  function replay(path, body) {
    api("POST", path + "/replay", body).then(function (r) {
      if (!r.ok) return showProblem(r);
      showAlert("Replay queued: " + JSON.stringify(r.data), true);
      if (dlqEndpoint) loadDlq(dlqEndpoint);
    });
  }

  /* catalogue */
  function loadWines() { return pagedList("wines", "/v1/wines", function (w) { return [w.id, w.title, w.vintage || (w.is_non_vintage ? "NV" : ""), w.status]; }); }
  function loadOffers() { return pagedList("offers", "/v1/offers", function (o) { return [o.id, o.wine_id, o.seller_price + " " + o.currency, o.qty_available, o.status]; }); }
  function loadListings() { return pagedList("listings", "/v1/listings", function (l) { return [l.id, l.offer_id, (l.shelf_price === null || l.shelf_price === undefined ? "" : l.shelf_price) + " " + (l.currency || ""), l.status]; }); }
  function loadCatalogue() {
    if (locked("catalogue", "catalogue", "read:wines")) return Promise.resolve();
    /* each form for the roles that may write it (engine/edge/policy.c),
     * from onboarding step 3 on */
    var roles = session.partner.roles || [], writing = STATUS_ORDER.indexOf(session.partner.status) >= 2;
    function role(r) { return roles.indexOf(r) >= 0; }
    $("wine-form").hidden = !(writing && hasScope("write:wines") && (role("originator") || role("fulfiller")));
    $("offer-form").hidden = !(writing && hasScope("write:offers") && role("originator"));
    $("listing-form").hidden = !(writing && hasScope("write:listings") && role("seller"));
    return Promise.all([loadWines(), loadOffers(), loadListings()]);
  }

  /* test order */
  function loadOrder() {
    var closed = locked("order", "order", "write:orders") || locked("order", "catalogue", "read:wines");
    if (!closed && (session.partner.roles || []).indexOf("seller") < 0) {
      $("order-locked").textContent = "Test orders are placed by sellers: this partner has no seller role.";
      $("order-locked").hidden = false;
      closed = true;
    }
    $("order-form").hidden = closed;
    if (closed) return Promise.resolve();
    return api("GET", "/v1/wines?page_size=50").then(function (r) {
      var s = $("order-sku"), keep = s.value;
      clear(s);
      if (!r.ok) { showProblem(r); return; }
      r.data.data.forEach(function (w) {
        var o = el("option", w.title + " (" + w.id + ")");
        o.value = w.id;
        s.appendChild(o);
      });
      if (keep) s.value = keep;
      if (!$("order-dest").dataset.touched && session.partner) $("order-dest").value = session.partner.country;
    });
  }
  var polling = null;
  function followOrder(order) {
    var id = order.id || order.order_id;
    $("order-progress").hidden = false;
    $("order-id").textContent = id;
    var rounds = 0;
    if (polling) clearTimeout(polling);
    function render(o, docs) {
      $("order-status").textContent = o.status;
      var ol = $("order-states"), at = ORDER_STATES.indexOf(o.status);
      if (at < 0 && o.status !== "failed" && o.status !== "cancelled") at = ORDER_STATES.length - 1;
      clear(ol);
      ORDER_STATES.forEach(function (s, i) {
        var li = el("li", s, i <= at ? "done" : "todo");
        li.dataset.state = s;
        ol.appendChild(li);
      });
      if (ORDER_STATES.indexOf(o.status) < 0) {
        var li = el("li", o.status + (o.failure ? " (" + (o.failure.code || JSON.stringify(o.failure)) + ")" : ""), "current");
        li.dataset.state = o.status;
        ol.appendChild(li);
      }
      if (docs) {
        var ul = $("order-docs");
        clear(ul);
        docs.forEach(function (d) {
          var li = el("li", d.type + " " + (d.series || "") + "/" + (d.number || "") + ": " + d.status);
          li.dataset.status = d.status;
          ul.appendChild(li);
        });
        if (!docs.length) ul.appendChild(el("li", "none yet"));
      }
    }
    render(order, null);
    function tick() {
      Promise.all([api("GET", "/v1/orders/" + encodeURIComponent(id)),
                   api("GET", "/v1/orders/" + encodeURIComponent(id) + "/documents")]).then(function (rs) {
        if (!rs[0].ok) { showProblem(rs[0]); return; }
        var docs = rs[1].ok ? rs[1].data.data : null;
        render(rs[0].data, docs);
        var settled = docs && docs.length && docs.every(function (d) { return d.status !== "pending"; });
        if (++rounds < 30 && !settled && rs[0].data.status !== "failed") polling = setTimeout(tick, 1000);
        else document.body.dataset.orderDone = "1";
      });
    }
    tick();
  }

  var LOADERS = {onboarding: loadOnboarding, roles: loadRoles, keys: loadKeys, webhooks: loadWebhooks,
                 catalogue: loadCatalogue, order: loadOrder};

  /* ---- session -------------------------------------------------------------- */

  function refreshPartner() {
    return api("GET", "/v1/partners/" + encodeURIComponent(session.me.entity_id)).then(function (r) {
      if (!r.ok) { showProblem(r); return; }
      session.partner = r.data;
      $("who").textContent = r.data.legal_name + " (" + r.data.id + ", " + r.data.country + ") - " + r.data.status;
    });
  }

  /* Sign in: find this key among the entity's keys by its display prefix
   * (GET /api/keys), then read the partner it belongs to. */
  function signIn(key, form) {
    return api("GET", "/api/keys?page_size=200", null, key).then(function (r) {
      if (!r.ok) { showProblem(r, form); return; }
      var me = (r.data.data || []).filter(function (k) { return key.indexOf(k.prefix) === 0 && !k.revoked_at; })[0];
      if (!me) { showAlert("This key is valid but was not found among its entity's keys."); return; }
      if (me.entity_id === "platform") { showAlert("This is an operator key: the portal is for partners' keys."); return; }
      session = {key: key, me: me, partner: null};
      return refreshPartner().then(function () {
        if (!session.partner) { session = null; return; }
        $("nav").hidden = false;
        $("signout").hidden = false;
        $("signin-key").value = "";
        if (location.hash === "#onboarding") route(); else location.hash = "#onboarding";
        $("main").focus();
      });
    });
  }

  function init() {
    $("signin-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var f = $("signin-form");
      clearErrors(f);
      hideAlert();
      var k = $("signin-key").value.trim();
      if (!k) { f.querySelector('[data-for="key"]').textContent = "Enter a secret key."; return; }
      signIn(k, f);
    });
    $("signout").addEventListener("click", function () {
      session = null;
      $("nav").hidden = true;
      $("signout").hidden = true;
      $("who").textContent = "";
      location.hash = "";
      show("signin");
    });
    $("onb-refresh").addEventListener("click", function () { loadOnboarding(); });
    bindForm("caps-form", "PATCH", function () { return "/v1/partners/" + encodeURIComponent(session.partner.id); },
             function (p) { session.partner = p; loadRoles().then(function () { showAlert("Capability flags saved.", true); }); });
    bindForm("mint-form", "POST", "/api/keys", function (k, form) {
      $("minted-key").value = k.key;
      $("minted").hidden = false;
      $("minted-copy").textContent = "Copy";
      form.reset();
      loadKeys();
      $("minted-key").focus();
    });
    $("minted-copy").addEventListener("click", function () { copyFrom("minted-key", $("minted-copy")); });
    $("minted-done").addEventListener("click", function () { $("minted-key").value = ""; $("minted").hidden = true; });
    bindForm("whe-form", "POST", "/v1/webhook-endpoints", function (w, form) {
      $("whe-secret-value").value = w.secret || "";
      $("whe-secret").hidden = false;
      form.reset();
      loadWebhooks();
      $("whe-secret-value").focus();
    });
    $("whe-secret-copy").addEventListener("click", function () { copyFrom("whe-secret-value", $("whe-secret-copy")); });
    $("whe-secret-done").addEventListener("click", function () { $("whe-secret-value").value = ""; $("whe-secret").hidden = true; });
    $("dlq-replay-all").addEventListener("click", function () {
      if (dlqEndpoint) replay("/v1/webhook-endpoints/" + encodeURIComponent(dlqEndpoint.id), {});
    });
    bindForm("wine-form", "POST", "/v1/wines", function (w, f) { f.reset(); showAlert("Wine " + w.id + " created.", true); loadWines(); });
    bindForm("offer-form", "POST", "/v1/offers", function (o, f) { f.reset(); showAlert("Offer " + o.id + " created.", true); loadOffers(); });
    bindForm("listing-form", "POST", "/v1/listings", function (l, f) { f.reset(); showAlert("Listing " + l.id + " created.", true); loadListings(); });
    bindPager("keys", loadKeys);
    bindPager("deliv", loadDeliveries);
    bindPager("wines", loadWines);
    bindPager("offers", loadOffers);
    bindPager("listings", loadListings);
    $("order-dest").addEventListener("input", function () { $("order-dest").dataset.touched = "1"; });
    var of = $("order-form");
    of.addEventListener("submit", function (ev) {
      ev.preventDefault();
      clearErrors(of);
      hideAlert();
      var body = formBody(of);
      body.payment = {method: "sandbox_ok"};
      $("order-submit").disabled = true;
      api("POST", "/v1/orders", body).then(function (r) {
        $("order-submit").disabled = false;
        if (!r.ok) {
          showProblem(r, of);
          if (r.data && r.data.order) followOrder(r.data.order);
          return;
        }
        followOrder(r.data);
      });
    });
    window.addEventListener("hashchange", route);
    route();
  }
  document.addEventListener("DOMContentLoaded", init);
})();
