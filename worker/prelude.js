// The worker's prelude: runs once in every fresh context before user code. It builds
// console, host.*, fetch/net and timers on top of three native functions (the bridge,
// which waits for its reply, bridgeStart, which does not: see worker/async.go, and
// note, which tells the supervisor a console line as it is logged, for a call whose
// client follows its progress), which it captures and then hides. Everything user code can reach is replaceable by
// user code, so the prelude keeps private copies of what it relies on.
(function (g, bridge, bridgeStart, note) {
  "use strict";
  const parse = JSON.parse, stringify = JSON.stringify;
  const StringCtor = String, ErrorCtor = Error, TypeErrorCtor = TypeError;
  const isArray = Array.isArray, ownKeys = Reflect.ownKeys, getOwnDesc = Reflect.getOwnPropertyDescriptor;
  const defineProperty = Object.defineProperty, freeze = Object.freeze, create = Object.create;
  const apply = Reflect.apply, objToString = Object.prototype.toString;
  const hasOwn = Object.prototype.hasOwnProperty;
  const own = (o, k) => apply(hasOwn, o, [k]);
  // Arrays are filled by index, never with methods user code can replace.
  const append = (a, v) => { a[a.length] = v; };
  const contains = (a, v) => { for (let i = 0; i < a.length; i++) if (a[i] === v) return true; return false; };
  const indirectEval = g.eval;
  const promiseResolve = (v) => Promise.resolve(v);
  const PromiseCtor = Promise, promiseReject = (e) => apply(PromiseCtor.reject, PromiseCtor, [e]);
  const MAX_LOG_BYTES = 256 * 1024, MAX_LOG_LINES = 1000, MAX_DEPTH = 64;

  const logs = [];
  let logBytes = 0, logsCut = false, noting = false;

  // render turns any value into something JSON can hold, without calling user code
  // except toJSON (which JSON itself would call) and never looping on cycles.
  function render(v, seen, depth) {
    switch (typeof v) {
      case "undefined": return null;
      case "number": return (v !== v || v === Infinity || v === -Infinity) ? StringCtor(v) : v;
      case "string": case "boolean": return v;
      case "bigint": return StringCtor(v) + "n";
      case "symbol": return apply(Symbol.prototype.toString, v, []);
      case "function": {
        const d = getOwnDesc(v, "name");
        const name = d && typeof d.value === "string" ? d.value : "";
        return "[Function" + (name ? ": " + name : " (anonymous)") + "]";
      }
    }
    if (v === null) return null;
    if (contains(seen, v)) return "[Circular]";
    if (depth >= MAX_DEPTH) return "[Too deep]";
    const tj = v.toJSON;
    if (typeof tj === "function") {
      return render(apply(tj, v, []), seen, depth + 1);
    }
    append(seen, v);
    let out;
    if (isArray(v)) {
      out = [];
      for (let i = 0; i < v.length; i++) append(out, render(v[i], seen, depth + 1));
    } else if (v instanceof ErrorCtor) {
      out = errorString(v);
    } else {
      const tag = apply(objToString, v, []);
      if (tag === "[object Map]") {
        out = {};
        for (const [k, val] of v) out[StringCtor(typeof k === "symbol" ? apply(Symbol.prototype.toString, k, []) : k)] = render(val, seen, depth + 1);
      } else if (tag === "[object Set]") {
        out = [];
        for (const val of v) append(out, render(val, seen, depth + 1));
      } else {
        out = {};
        for (const k of ownKeys(v)) {
          if (typeof k !== "string") continue;
          const d = getOwnDesc(v, k);
          if (!d || !d.enumerable) continue;
          out[k] = render("value" in d ? d.value : v[k], seen, depth + 1);
        }
      }
    }
    seen.length--;
    return out;
  }

  function errorString(e) {
    try {
      if (e instanceof ErrorCtor) {
        const name = typeof e.name === "string" ? e.name : "Error";
        const msg = typeof e.message === "string" ? e.message : "";
        return msg ? name + ": " + msg : name;
      }
      if (typeof e === "string") return "Uncaught " + e;
      return "Uncaught " + stringify(render(e, [], 0));
    } catch (_) {
      return "Uncaught exception (could not be rendered)";
    }
  }

  function logLine(args) {
    if (logsCut) return;
    let s = "";
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      let part;
      try {
        part = typeof a === "string" ? a : stringify(render(a, [], 0));
      } catch (e) {
        part = "[unrenderable: " + errorString(e) + "]";
      }
      if (part === undefined) part = "undefined";
      s += (i ? " " : "") + part;
    }
    if (logs.length >= MAX_LOG_LINES || logBytes + s.length > MAX_LOG_BYTES) {
      append(logs, "[logs truncated: more than " + MAX_LOG_LINES + " lines or " + MAX_LOG_BYTES + " bytes]");
      logsCut = true;
      return;
    }
    logBytes += s.length;
    append(logs, s);
    if (noting) note(s);
  }

  // call asks the supervisor; only the reply's own properties count, so nothing
  // planted on Object.prototype can forge an error or a result.
  function call(op, args) {
    const r = parse(bridge(op, stringify(args)));
    if (own(r, "error")) throw new ErrorCtor(r.error);
    return own(r, "data") ? r.data : undefined;
  }
  function pathArg(p, fn) {
    if (typeof p !== "string") throw new TypeErrorCtor(fn + ": path must be a string, got " + (p === null ? "null" : typeof p));
    return p;
  }

  const consoleObj = create(null);
  for (const k of ["log", "info", "debug", "warn", "error", "trace"]) {
    consoleObj[k] = function () { logLine(arguments); };
  }
  g.console = freeze(consoleObj);

  const hostObj = create(null);
  hostObj.readFile = function readFile(path) { return call("readFile", { path: pathArg(path, "readFile") }); };
  hostObj.writeFile = function writeFile(path, content) {
    pathArg(path, "writeFile");
    if (typeof content !== "string") throw new TypeErrorCtor("writeFile: content must be a string, got " + (content === null ? "null" : typeof content));
    call("writeFile", { path, content });
  };
  hostObj.listDir = function listDir(path) { return call("listDir", { path: pathArg(path, "listDir") }); };
  defineProperty(g, "host", { value: freeze(hostObj), enumerable: false, configurable: false, writable: false });

  function headersObject(h) {
    const map = create(null);
    for (const k of ownKeys(h)) map[StringCtor(k).toLowerCase()] = h[k];
    return freeze({
      get(name) { const v = map[StringCtor(name).toLowerCase()]; return v === undefined ? null : v; },
      has(name) { return map[StringCtor(name).toLowerCase()] !== undefined; },
      entries() { return ownKeys(map).map((k) => [k, map[k]]); },
    });
  }
  function fetchArgs(url, init) {
    if (typeof url !== "string") {
      if (url && typeof url.url === "string") url = url.url; else url = StringCtor(url);
    }
    const o = create(null);
    if (init !== undefined && init !== null) {
      if (typeof init !== "object") throw new TypeErrorCtor("fetch: options must be an object");
      if (init.method !== undefined) o.method = StringCtor(init.method);
      if (init.body !== undefined && init.body !== null) o.body = StringCtor(init.body);
      if (init.headers !== undefined && init.headers !== null) {
        const h = create(null);
        for (const k of ownKeys(init.headers)) if (typeof k === "string") h[k] = StringCtor(init.headers[k]);
        o.headers = h;
      }
    }
    return { url, init: o };
  }
  function response(r) {
    const body = r.body;
    return freeze({
      ok: r.status >= 200 && r.status < 300, status: r.status, statusText: r.statusText,
      url: r.url, redirected: r.redirected, headers: headersObject(r.headers || {}),
      text() { return promiseResolve(body); },
      json() { return promiseResolve().then(() => parse(body)); },
    });
  }
  // Fetches run at the same time: each is sent at once and its promise waits in
  // waiting (by request id) until the event loop calls settle with the reply.
  const waiting = create(null);
  const fetchFn = function fetch(url, init) {
    let r;
    try {
      r = parse(bridgeStart("fetch", stringify(fetchArgs(url, init))));
    } catch (e) {
      return promiseReject(e);
    }
    if (own(r, "error")) return promiseReject(new ErrorCtor(r.error));
    const id = r.data;
    return new PromiseCtor((resolve, reject) => { waiting[id] = { resolve, reject }; });
  };
  const netObj = create(null);
  netObj.fetch = fetchFn;
  netObj.fetchJson = function fetchJson(url, init) { return fetchFn(url, init).then((r) => r.json()); };

  // Timers: the worker's event loop asks nextTimer() how long to sleep and then calls
  // runTimer(); user code sees setTimeout/clearTimeout/setInterval/clearInterval.
  const timers = [];
  let timerSeq = 0, clock = 0;
  function addTimer(fn, ms, args, repeat) {
    if (typeof fn !== "function") throw new TypeErrorCtor("timer callback must be a function");
    ms = +ms; if (!(ms >= 0)) ms = 0;
    const id = ++timerSeq;
    append(timers, { id, at: clock + ms, fn, args, repeat: repeat ? (ms || 1) : 0 });
    return id;
  }
  function removeTimer(i) {
    for (let j = i; j < timers.length - 1; j++) timers[j] = timers[j + 1];
    timers.length--;
  }
  function clearTimer(id) {
    for (let i = 0; i < timers.length; i++) if (timers[i].id === id) { removeTimer(i); return; }
  }
  g.setTimeout = function setTimeout(fn, ms, ...args) { return addTimer(fn, ms, args, false); };
  g.setInterval = function setInterval(fn, ms, ...args) { return addTimer(fn, ms, args, true); };
  g.clearTimeout = g.clearInterval = function clearTimeout(id) { clearTimer(id); };

  function earliest() {
    let best = -1;
    for (let i = 0; i < timers.length; i++) if (best < 0 || timers[i].at < timers[best].at) best = i;
    return best;
  }

  const internals = freeze({
    // setup runs per call before user code.
    setup(allowNetwork, progress) {
      noting = !!progress;
      if (allowNetwork) {
        defineProperty(g, "fetch", { value: fetchFn, writable: true, configurable: true });
        defineProperty(g, "net", { value: freeze(netObj), writable: true, configurable: true });
      }
    },
    // settle gives the reply of fetch id to its promise; ms is how long the event
    // loop slept before it came, which moves the timer clock on (never past the
    // next timer, which then runs next).
    settle(id, reply, ms) {
      clock += ms;
      const i = earliest();
      if (i >= 0 && clock > timers[i].at) clock = timers[i].at;
      const w = waiting[id];
      if (w === undefined) return;
      delete waiting[id];
      const r = parse(reply);
      if (own(r, "error")) w.reject(new ErrorCtor(r.error)); else w.resolve(response(r.data));
    },
    nextTimer() { const i = earliest(); return i < 0 ? -1 : Math.max(0, timers[i].at - clock); },
    runTimer() {
      const i = earliest(); if (i < 0) return;
      const t = timers[i];
      clock = t.at;
      if (t.repeat) t.at = clock + t.repeat; else removeTimer(i);
      apply(t.fn, undefined, t.args);
    },
    // evaluate runs code as a global script and gives a promise of its completion
    // value; a throw becomes a rejection, rendered like any other.
    evaluate(code) {
      try { return promiseResolve(indirectEval(code)); } catch (e) { return promiseReject(e); }
    },
    serialize(v) {
      const s = stringify(render(v, [], 0));
      return s === undefined ? "null" : s;
    },
    errorString,
    logs() { return stringify(logs); },
  });
  return internals;
})
