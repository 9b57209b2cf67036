/*
 * idemgate browser helper, served by the gateway at /_idem/client.js.
 *
 * idem.fetch(url, options) wraps fetch: one idempotency key per logical
 * submission, kept in sessionStorage until a final answer (so a reload in
 * the middle of a request resubmits under the same key and gets the
 * replay), retried with the same key on network errors, 409 in-progress,
 * 429, 502/503/504 from the gateway (Retry-After honoured, jittered
 * backoff, bounded), stopped with an IdemError on 422 key-reuse,
 * outcome-unknown and the like.
 *
 * idem.form(form, options) wires a <form>: a form token fetched for its
 * scope when the page loads (data-idem-scope), the submit button disabled
 * while a submission is in flight, Form-Token and the key sent, the answer
 * (a replay included) shown in the form's [data-idem-result] element.
 */
(function (global) {
  "use strict";

  var PENDING = "idem:pending:"; // sessionStorage prefix of unfinished submissions
  var RETRY_TYPES = {
    "in-progress": true, "unavailable": true, "upstream-unreachable": true,
    "upstream-timeout": true, "too-many-requests": true
  };
  var PROBLEM_BASE = "https://idemgate.dev/problems/";

  function newKey() {
    if (global.crypto && typeof global.crypto.randomUUID === "function") {
      return global.crypto.randomUUID();
    }
    var b = new Uint8Array(16);
    global.crypto.getRandomValues(b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    var h = Array.prototype.map.call(b, function (x) { return (x + 256).toString(16).slice(1); }).join("");
    return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
  }

  // Session storage may be off (a privacy mode) or full: the helper then
  // keeps keys for the life of the page only.
  var memory = {};
  function load(slot) {
    try {
      var v = global.sessionStorage.getItem(PENDING + slot);
      return v ? JSON.parse(v) : null;
    } catch (e) {
      return memory[slot] || null;
    }
  }
  function save(slot, v) {
    memory[slot] = v;
    try { global.sessionStorage.setItem(PENDING + slot, JSON.stringify(v)); } catch (e) { /* memory only */ }
  }
  function forget(slot) {
    delete memory[slot];
    try { global.sessionStorage.removeItem(PENDING + slot); } catch (e) { /* memory only */ }
  }

  function sleep(ms, signal) {
    return new Promise(function (resolve, reject) {
      var t = setTimeout(resolve, ms);
      if (signal) {
        signal.addEventListener("abort", function () { clearTimeout(t); reject(signal.reason); }, { once: true });
      }
    });
  }

  // delay is how long to wait before retry number attempt (1, 2, ...):
  // Retry-After when the answer has one, else exponential backoff from
  // 250 ms; with full jitter above a floor of half, so clients that failed
  // together do not retry together; at most maxDelay.
  function delay(resp, attempt, maxDelay) {
    var base = Math.min(maxDelay, 250 * Math.pow(2, attempt - 1));
    var ra = resp && resp.headers.get("Retry-After");
    if (ra) {
      var secs = /^\d+$/.test(ra) ? Number(ra) : (Date.parse(ra) - Date.now()) / 1000;
      if (secs >= 0) base = Math.min(maxDelay, secs * 1000);
    }
    return base / 2 + Math.random() * base / 2;
  }

  function IdemError(kind, message, response, problem, key) {
    var e = new Error(message);
    e.name = "IdemError";
    e.kind = kind; // "key-reuse", "outcome-unknown", "token-used", "gave-up", ...
    e.response = response || null;
    e.problem = problem || null;
    e.key = key;
    return e;
  }

  function problemType(problem) {
    var t = problem && typeof problem.type === "string" ? problem.type : "";
    return t.indexOf(PROBLEM_BASE) === 0 ? t.slice(PROBLEM_BASE.length) : "";
  }

  async function readProblem(resp) {
    var ct = resp.headers.get("Content-Type") || "";
    if (ct.indexOf("application/problem+json") !== 0) return null;
    try { return await resp.clone().json(); } catch (e) { return null; }
  }

  // token asks the gateway for a one-shot form token in scope.
  async function token(scope, options) {
    options = options || {};
    var base = options.base || "";
    var resp = await fetch(base + "/_idem/tokens?scope=" + encodeURIComponent(scope), {
      method: "POST", credentials: "same-origin", signal: options.signal
    });
    if (!resp.ok) {
      var p = await readProblem(resp);
      throw IdemError("token", "form token for scope " + scope + ": " + resp.status + (p && p.detail ? " " + p.detail : ""), resp, p);
    }
    return (await resp.json()).token;
  }

  /*
   * idemFetch sends one logical submission. options are fetch's, plus:
   *   slot       names the submission in sessionStorage (default: method
   *              and URL); a pending key under it is reused
   *   key        the key to use (default: the pending one, or a new UUID)
   *   tokenScope a form-token scope: a token is fetched (or
   *              options.formToken used), sent as Form-Token, kept with the
   *              key, resent on retries
   *   attempts   the most requests sent (default 8)
   *   maxDelay   the longest wait between two (ms, default 5000)
   *   deadline   the longest time all attempts take (ms, default 30000)
   *   onAttempt  called with (attempt, key) before each request
   * It resolves with the final Response (idemKey, idemStatus and
   * idemReplayed are set on it), and rejects with an IdemError.
   */
  async function idemFetch(url, options) {
    options = Object.assign({}, options || {});
    var method = (options.method || "GET").toUpperCase();
    var slot = options.slot || method + " " + url;
    var pending = load(slot) || {};
    var key = options.key || pending.key || newKey();
    var formToken = pending.key === key && pending.token ? pending.token : options.formToken;
    if (options.tokenScope && !formToken) formToken = await token(options.tokenScope, { signal: options.signal });
    save(slot, { key: key, token: formToken || null, at: Date.now() });

    var attempts = options.attempts || 8, maxDelay = options.maxDelay || 5000;
    var end = Date.now() + (options.deadline || 30000);
    // A token sent before (by an earlier attempt, or before a reload) that
    // comes back token-used, with no record to answer from, was spent by
    // an attempt whose key was released (nothing ran): the same key with
    // one new token is still the same submission.
    var tokenSent = pending.key === key && !!pending.token, freshToken = false;
    var last = null;
    for (var attempt = 1; ; attempt++) {
      var headers = new Headers(options.headers || {});
      headers.set("Idempotency-Key", key);
      if (formToken) headers.set("Form-Token", formToken);
      if (options.onAttempt) options.onAttempt(attempt, key);
      var resp = null, problem = null;
      try {
        // The body is read here, whole: a connection cut in the middle of
        // it is a network error like any other, and is retried.
        var got = await fetch(url, Object.assign({}, options, { method: method, headers: headers }));
        var buf = await got.arrayBuffer();
        resp = new Response(got.status === 204 || got.status === 304 ? null : buf,
          { status: got.status, statusText: got.statusText, headers: got.headers });
      } catch (err) {
        if (options.signal && options.signal.aborted) throw err;
        last = err; // the network: the request may or may not have arrived
      }
      var sentBefore = tokenSent;
      tokenSent = tokenSent || !!formToken;
      if (resp) {
        problem = await readProblem(resp);
        var type = problemType(problem);
        var replayed = resp.headers.get("Idempotent-Replayed") === "true";
        if (type === "token-used" && sentBefore && !freshToken && options.tokenScope) {
          freshToken = true;
          tokenSent = false;
          formToken = await token(options.tokenScope, { signal: options.signal });
          save(slot, { key: key, token: formToken, at: Date.now() });
          attempt--;
          continue;
        }
        if (replayed || !(RETRY_TYPES[type] || resp.status === 429 || resp.status === 503)) {
          return finish(slot, key, resp, problem, type);
        }
        last = resp;
      }
      var wait = delay(resp, attempt, maxDelay);
      if (attempt >= attempts || Date.now() + wait > end) {
        throw IdemError("gave-up", "no final answer after " + attempt + " attempts; the submission is kept: send it again to get its answer",
          resp, problem, key);
      }
      await sleep(wait, options.signal);
    }
  }

  // finish ends a submission on a final answer: the key is forgotten (the
  // next submission gets a new one), except after outcome-unknown, which
  // stays until idem.forget: a new key could run the payment twice.
  function finish(slot, key, resp, problem, type) {
    resp.idemKey = key;
    resp.idemStatus = resp.headers.get("Idempotency-Status");
    resp.idemReplayed = resp.headers.get("Idempotent-Replayed") === "true";
    if (type === "outcome-unknown") {
      throw IdemError(type, "the first request with this key may or may not have been carried out: check before you submit again", resp, problem, key);
    }
    forget(slot);
    if (type === "key-reuse" || type === "token-used" || type === "missing-token" || type === "invalid-key" || type === "missing-key") {
      throw IdemError(type, (problem && problem.detail) || type, resp, problem, key);
    }
    return resp;
  }

  function formSlot(form) {
    return form.getAttribute("data-idem-slot") || form.id || ((form.method || "post").toUpperCase() + " " + form.action);
  }

  /*
   * idemForm wires a <form>. The form's action and method are the request;
   * its fields are sent as a JSON object (data-idem-encoding="form" sends
   * them urlencoded). options:
   *   headers  an object, or a function returning one, of extra headers
   *   result   the element that shows the answer (default the form's
   *            [data-idem-result])
   *   onResult called with (response, text) after a final answer
   *   onError  called with (error)
   * The result element gets data-status, data-idem-status, data-key and the
   * answer's text. The form gets the "idem-busy" class while in flight.
   */
  function idemForm(form, options) {
    options = options || {};
    var scope = form.getAttribute("data-idem-scope") || "";
    var out = options.result || form.querySelector("[data-idem-result]");
    var slot = formSlot(form);
    var busy = false;
    var nextToken = null;

    function prefetch() {
      if (!scope) return;
      nextToken = token(scope).catch(function () { return null; });
    }
    prefetch();

    function show(text, attrs) {
      if (!out) return;
      out.textContent = text;
      Object.keys(attrs).forEach(function (k) { out.setAttribute(k, attrs[k] == null ? "" : String(attrs[k])); });
    }

    function body() {
      var data = new FormData(form);
      if (form.getAttribute("data-idem-encoding") === "form") {
        return { body: new URLSearchParams(data).toString(), type: "application/x-www-form-urlencoded" };
      }
      var obj = {};
      data.forEach(function (v, k) { obj[k] = v; });
      return { body: JSON.stringify(obj), type: "application/json" };
    }

    form.addEventListener("submit", async function (ev) {
      ev.preventDefault();
      if (busy) return; // a second click while the first is in flight
      busy = true;
      var buttons = form.querySelectorAll("button[type=submit], input[type=submit], button:not([type])");
      buttons.forEach(function (b) { b.disabled = true; });
      form.classList.add("idem-busy");
      show("sending…", { "data-status": "", "data-idem-status": "", "data-key": "" });
      try {
        var b = body();
        var headers = typeof options.headers === "function" ? options.headers() : (options.headers || {});
        headers = Object.assign({ "Content-Type": b.type }, headers);
        var tok = nextToken ? await nextToken : null;
        var resp = await idemFetch(form.action, {
          method: (form.getAttribute("method") || "POST").toUpperCase(), body: b.body, headers: headers,
          slot: slot, formToken: tok || undefined, tokenScope: scope || undefined, credentials: "same-origin"
        });
        var text = await resp.text();
        show(text, { "data-status": resp.status, "data-idem-status": resp.idemStatus, "data-key": resp.idemKey,
          "data-replayed": resp.idemReplayed });
        if (options.onResult) options.onResult(resp, text);
      } catch (err) {
        show(err.message, { "data-status": err.response ? err.response.status : "error",
          "data-idem-status": err.kind || "error", "data-key": err.key || "" });
        if (options.onError) options.onError(err);
      } finally {
        prefetch(); // the next submission's token
        busy = false;
        form.classList.remove("idem-busy");
        buttons.forEach(function (b) { b.disabled = false; });
      }
    });
    return { slot: slot, pending: function () { return load(slot); } };
  }

  global.idem = {
    fetch: idemFetch,
    form: idemForm,
    token: token,
    newKey: newKey,
    pending: load,
    forget: forget
  };
})(typeof window !== "undefined" ? window : this);
