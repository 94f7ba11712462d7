/* mau view: the match and run pages. Vanilla JS, no library, no network: the data arrives as script files
   (data.js, calls/<seat>.js) so that the pages work from file:// as well as from `mau view --serve`. */
(function () {
  "use strict";
  const MAU = (window.MAU = {});
  let D = null;
  const CALLS = {};
  const S = { step: 0, p: null, roles: false, truth: false, playing: false, timer: null, speed: 4, claim: null };
  const SVG = "http://www.w3.org/2000/svg";

  MAU.data = (d) => { D = d; };
  MAU.calls = (agent, list) => { CALLS[agent] = list; if (S.p === agent && D) drawCalls(); };
  MAU.state = S;

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "on") for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, v);
    for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  const $ = (id) => document.getElementById(id);
  const rgb = (c) => `rgb(${c[0]},${c[1]},${c[2]})`;
  const fmt = (x) => (x === null || x === undefined ? "–" : typeof x === "number" ? (Math.round(x * 100) / 100).toString() : String(x));

  MAU.start = function () {
    const app = $("app");
    if (!D) { app.textContent = "No data: data.js did not load. Rebuild the page with mau view."; return; }
    app.textContent = "";
    if (D.kind === "run") startRun(app); else startMatch(app);
    document.body.dataset.readyMs = Math.round(performance.now());  // ms from navigation start to interactive
    document.body.dataset.ready = "1";
  };

  function problemsBox(list) {
    if (!list || !list.length) return null;
    return el("div", { id: "problems", class: "problems" }, el("b", { text: "Missing or damaged: " }),
      el("ul", {}, list.map((p) => el("li", { text: p }))));
  }

  /* ------------------------------------------------------------------ match page */
  let byStep = [];  // byStep[s] = index of the track line that holds the positions at moment s (or -1)
  const player = {};

  function startMatch(app) {
    for (const p of D.players) player[p.name] = p;
    byStep = new Array(D.last_step + 1).fill(-1);
    let j = -1;
    for (let s = 0; s <= D.last_step; s++) {
      while (j + 1 < D.tracks.length && D.tracks[j + 1].s <= s) j++;
      byStep[s] = j;
    }
    const h = D.header;
    app.append(...[
      el("header", {},
        el("h1", {}, D.run_href ? el("a", { href: D.run_href, id: "run-link" }, "run") : null, D.run_href ? " / " : "",
          "match ", el("span", { id: "match-id", text: D.id })),
        el("div", { class: "facts" },
          `seed ${fmt(h.seed)} · ${h.backend || "?"} on ${h.map || "?"} · ${fmt(h.steps)} steps · `,
          el("b", { id: "outcome", text: h.outcome || "no outcome" }), h.end_reason ? ` (${h.end_reason})` : "",
          D.grid && D.grid.imposter_model ? ` · imposters ${D.grid.imposter_model} vs crew ${D.grid.crewmate_model}` : ""),
        el("label", { class: "toggle" }, el("input", { type: "checkbox", id: "reveal", on: { change: (e) => { S.roles = e.target.checked; update(); } } }),
          " reveal roles"),
        el("label", { class: "toggle" }, el("input", { type: "checkbox", id: "reveal-truth", on: { change: (e) => { S.truth = e.target.checked; update(); } } }),
          " reveal truth")),
      problemsBox(D.problems),
      el("main", {},
        el("section", { id: "left" },
          el("div", { id: "mapbox" }),
          el("div", { class: "controls" },
            el("button", { id: "prev", title: "previous step (←)", on: { click: () => setStep(S.step - 1) } }, "◀"),
            el("button", { id: "play", title: "play / pause (space)", on: { click: togglePlay } }, "▶"),
            el("button", { id: "next", title: "next step (→)", on: { click: () => setStep(S.step + 1) } }, "▶|"),
            el("input", { type: "range", id: "slider", min: 0, max: D.last_step, value: 0, on: { input: (e) => setStep(+e.target.value) } }),
            el("span", { id: "steplabel" })),
          el("div", { id: "players", class: "players" }),
          el("h2", {}, "Timeline"), el("ol", { id: "timeline", class: "timeline" })),
        el("section", { id: "right" },
          el("h2", { id: "frames-title" }, "View"), el("div", { id: "frames", class: "frames" }),
          el("div", { id: "beliefs-box" }),
          el("h2", {}, "Meeting"), el("div", { id: "meeting" }),
          el("h2", { id: "calls-title" }, "Calls"), el("div", { id: "calls" }),
          el("div", { id: "memory" })))].filter(Boolean));
    buildMap();
    readHash();
    if (!S.p && D.players.length) S.p = D.players[0].name;
    window.addEventListener("hashchange", () => { readHash(); update(); });
    document.addEventListener("keydown", onKey);
    update();
  }

  function readHash() {
    const q = new URLSearchParams(location.hash.slice(1));
    if (q.has("step")) S.step = Math.max(0, Math.min(D.last_step, parseInt(q.get("step"), 10) || 0));
    if (q.has("p") && player[q.get("p")]) S.p = q.get("p");
    if (q.has("roles")) S.roles = q.get("roles") === "1";
    if (q.has("truth")) S.truth = q.get("truth") === "1";
  }
  function writeHash() {
    const q = new URLSearchParams();
    q.set("step", S.step);
    if (S.p) q.set("p", S.p);
    if (S.roles) q.set("roles", "1");
    if (S.truth) q.set("truth", "1");
    const h = "#" + q.toString();
    if (location.hash !== h) history.replaceState(null, "", h);
  }
  function setStep(s) {
    S.step = Math.max(0, Math.min(D.last_step, s));
    if (S.step >= D.last_step && S.playing) togglePlay();
    update();
  }
  function select(name) { S.p = name; update(); }
  function togglePlay() {
    S.playing = !S.playing;
    $("play").textContent = S.playing ? "❚❚" : "▶";
    clearInterval(S.timer);
    if (S.playing) {
      if (S.step >= D.last_step) S.step = 0;
      S.timer = setInterval(() => setStep(S.step + 1), 1000 / S.speed);
    }
  }
  function onKey(e) {
    if (e.target && (e.target.tagName === "INPUT" && e.target.type !== "range" && e.target.type !== "checkbox")) return;
    const k = e.key, n = e.shiftKey ? 10 : 1;
    if (k === "ArrowRight") setStep(S.step + n);
    else if (k === "ArrowLeft") setStep(S.step - n);
    else if (k === "Home") setStep(0);
    else if (k === "End") setStep(D.last_step);
    else if (k === " ") togglePlay();
    else return;
    e.preventDefault();
  }

  function roleOf(name) { return player[name] ? player[name].role : null; }
  function colorOf(name) { return player[name] ? rgb(player[name].rgb) : "#888"; }

  function buildMap() {
    const box = $("mapbox");
    const m = D.map;
    let ox, oz, w, hh;
    if (m) { [ox, oz] = m.origin; [w, hh] = m.size; }
    else {  // no map: the bounding box of what we know
      const xs = [], zs = [];
      for (const t of D.tracks) for (const v of Object.values(t.p)) { xs.push(v[0]); zs.push(v[1]); }
      for (const e of D.events) if (e.type === "kill") { xs.push(e.x); zs.push(e.z); }
      if (!xs.length) { xs.push(0, 10); zs.push(0, 10); }
      ox = Math.min(...xs) - 3; oz = Math.min(...zs) - 3; w = Math.max(...xs) - ox + 3; hh = Math.max(...zs) - oz + 3;
    }
    const s = svg("svg", { id: "map", viewBox: `${ox} ${oz} ${w} ${hh}`, preserveAspectRatio: "xMidYMid meet" });
    if (m) {
      s.append(svg("image", { href: m.image, x: ox, y: oz, width: w, height: hh, preserveAspectRatio: "none", class: "mapimg" }));
      for (const r of m.rooms) {
        const [x0, x1, z0, z1] = r.rect;
        s.append(svg("text", { x: (x0 + x1 + 1) / 2, y: z0 + 1.6, class: "room" }, r.name));
      }
      m.stations.forEach((st, i) => s.append(svg("rect", { x: st[0], y: st[1], width: 1, height: 1, class: "station" }, svg("title", {}, `station ${i}`))));
      s.append(svg("rect", { x: m.button[0], y: m.button[1], width: 1, height: 1, class: "button" }, svg("title", {}, "emergency button")));
    }
    s.append(svg("g", { id: "tracks" }), svg("g", { id: "claimed" }), svg("g", { id: "bodies" }), svg("g", { id: "dots" }));
    box.append(s, el("p", { id: "claim-note", class: "note" }));
    if (!D.tracks.length) box.append(el("p", { class: "note", text: "No positions recorded: the map shows only where kills happened." }));
  }

  function drawMap() {
    const ti = byStep[S.step];
    const t = ti >= 0 ? D.tracks[ti] : null;
    const g = $("tracks"), gb = $("bodies"), gd = $("dots");
    g.textContent = ""; gb.textContent = ""; gd.textContent = "";
    // tracks: every player's path from the start to now (the selected player's in full colour)
    const paths = {};
    for (let i = 0; i <= ti; i++) for (const [n, v] of Object.entries(D.tracks[i].p)) (paths[n] = paths[n] || []).push(`${v[0]},${v[1]}`);
    for (const [n, pts] of Object.entries(paths))
      g.append(svg("polyline", { points: pts.join(" "), class: "track" + (n === S.p ? " sel" : ""), stroke: colorOf(n) }));
    drawClaim();
    const bodies = t ? t.b : D.events.filter((e) => e.type === "kill" && e.step <= S.step).map((e) => [e.victim, e.x, e.z]);
    for (const [v, x, z] of bodies) {
      const c = colorOf(v);
      gb.append(svg("g", { class: "body", "data-name": v, "data-x": x, "data-z": z },
        svg("line", { x1: x - 0.8, y1: z - 0.8, x2: x + 0.8, y2: z + 0.8, stroke: c }),
        svg("line", { x1: x - 0.8, y1: z + 0.8, x2: x + 0.8, y2: z - 0.8, stroke: c }),
        svg("title", {}, `body of ${v}`)));
    }
    if (!t) return;
    for (const [n, v] of Object.entries(t.p)) {
      const imp = S.roles && roleOf(n) === "imposter";
      const a = (v[2] * Math.PI) / 180;
      const dot = svg("g", { class: "player" + (n === S.p ? " sel" : "") + (imp ? " imp" : ""), "data-name": n, "data-x": v[0], "data-z": v[1] },
        svg("circle", { cx: v[0], cy: v[1], r: 0.9, fill: colorOf(n) }),
        svg("line", { x1: v[0], y1: v[1], x2: v[0] + 1.4 * Math.cos(a), y2: v[1] + 1.4 * Math.sin(a), class: "facing" }),
        svg("text", { x: v[0] + 1.2, y: v[1] - 1, class: "name" }, n + (imp ? " (imp)" : "")),
        svg("title", {}, `${n} at (${v[0]}, ${v[1]})`));
      dot.addEventListener("click", () => select(n));
      gd.append(dot);
    }
  }

  function drawClaim() {
    // The selected claim on the map: the place it names (dashed; coloured by the checker's verdict only with
    // "reveal truth") and where its subjects really went during its window (+/- 5 s, the checker's tolerance).
    const g = $("claimed"), note = $("claim-note");
    g.textContent = ""; note.textContent = "";
    const c = S.claim, w = c && c.where;
    if (!w) return;
    const truth = S.truth && c.verdict ? " v-" + c.verdict.toLowerCase() : "";
    const rects = (D.map && D.map.places && D.map.places[w.place]) || [];
    for (const [x0, x1, z0, z1] of rects)
      g.append(svg("rect", { x: x0, y: z0, width: x1 - x0 + 1, height: z1 - z0 + 1, class: "claimed" + truth, "data-place": w.place }));
    if (w.station !== null && w.station !== undefined && D.map && D.map.stations[w.station]) {
      const [x, z] = D.map.stations[w.station];
      g.append(svg("rect", { x: x - 1, y: z - 1, width: 3, height: 3, class: "claimed" + truth, "data-place": `station ${w.station}` }));
    }
    const lo = (w.from_s - 5) * D.ticks_per_second, hi = (w.to_s + 5) * D.ticks_per_second;
    const went = [];
    for (const name of w.subjects) {
      const pts = D.tracks.filter((t) => t.t !== undefined && t.t >= lo && t.t <= hi && t.a !== "meeting" && t.p[name])
        .map((t) => `${t.p[name][0]},${t.p[name][1]}`);
      if (pts.length === 1) pts.push(pts[0]);
      if (pts.length) { g.append(svg("polyline", { points: pts.join(" "), class: "claim-track", stroke: colorOf(name), "data-name": name })); went.push(name); }
    }
    const span = w.from_s === w.to_s ? `at ${w.from_s} s` : `from ${w.from_s} s to ${w.to_s} s`;
    note.append(el("button", { id: "claim-clear", title: "take the claim off the map", on: { click: () => { S.claim = null; update(); } } }, "×"),
      " ", el("b", { text: "claim: " }), c.text, ` Dashed: ${w.place || "station " + w.station}; thick: where ` +
      `${went.length ? went.join(" and ") : "its subjects (not in the tracks then)"} went ${span} (± 5 s).`,
      truth ? el("span", { class: "verdict", text: ` ${MARK[c.verdict] || ""} ${c.verdict}: ${c.reason || ""}` }) : null);
  }

  function drawPlayers() {
    const box = $("players");
    box.textContent = "";
    const t = byStep[S.step] >= 0 ? D.tracks[byStep[S.step]] : null;
    for (const p of D.players) {
      const here = !t || p.name in t.p;
      box.append(el("button", { class: "pl" + (p.name === S.p ? " sel" : "") + (here ? "" : " out"), "data-name": p.name, on: { click: () => select(p.name) } },
        el("span", { class: "sw", style: `background:${rgb(p.rgb)}` }), p.name,
        S.roles ? el("span", { class: "role " + p.role, text: " " + p.role }) : null));
    }
  }

  function describe(e) {
    const R = S.roles;
    switch (e.type) {
      case "match_start": return "match starts";
      case "kill": return R ? `${e.killer} kills ${e.victim} in ${e.room}` : `${e.victim} is killed in ${e.room}`;
      case "body_seen": return `${e.player} sees the body of ${e.body} (${e.room})`;
      case "report": return `${e.reporter} reports the body of ${e.body} (${e.room})`;
      case "emergency": return `${e.caller} calls an emergency meeting`;
      case "meeting_start": return `meeting: ${e.caller} (${e.reason})`;
      case "ejection": return e.text || "ejection";
      case "meeting_end": return "meeting ends";
      case "mission_complete": return `${e.player} completes a mission in ${e.room} (${e.done}/${e.of})`;
      case "fake_mission_start": return R ? `${e.player} fakes a mission in ${e.room}` : null;
      case "match_end": return `${e.outcome}: ${e.reason}`;
      default: return e.type;
    }
  }
  function buildTimeline() {
    const ol = $("timeline");
    ol.textContent = "";
    for (const e of D.events) {
      const text = describe(e);
      if (text === null) continue;
      ol.append(el("li", { class: "ev " + e.type, "data-step": e.step, "data-i": e.i, on: { click: () => setStep(e.step) } },
        el("span", { class: "st", text: e.step }), " ", text));
    }
    if (!D.events.length) ol.append(el("li", { class: "note", text: "no events" }));
  }
  function markTimeline() {
    let cur = null;
    for (const li of $("timeline").children) {
      const s = +li.dataset.step;
      li.classList.toggle("now", s === S.step);
      li.classList.toggle("future", s > S.step);
      if (s <= S.step) cur = li;
    }
    if (cur && cur.scrollIntoView && S.playing) cur.scrollIntoView({ block: "nearest" });
  }

  function drawFrames() {
    const box = $("frames");
    box.textContent = "";
    $("frames-title").textContent = `What ${S.p || "?"} saw at step ${S.step}`;
    const at = D.frames[String(S.step)] || {};
    const list = (at[S.p] || []).concat(at.topdown || []);
    if (!list.length) {
      const any = Object.keys(D.frames).length > 0;
      box.append(el("p", { class: "note", id: "no-frame", text: any ? `no frame of ${S.p} at step ${S.step}` : "this match has no frames" }));
      return;
    }
    for (const src of list) {
      const fig = el("figure", {}, el("img", { src, class: "frame", alt: src }), el("figcaption", { text: src.split("/").pop() }));
      fig.firstChild.addEventListener("error", () => { fig.firstChild.replaceWith(el("p", { class: "missing", text: `missing: ${src}` })); });
      box.append(fig);
    }
  }

  function lastMeeting() {
    let m = null;
    for (const x of D.meetings) if (x.step <= S.step) m = x;
    return m;
  }
  function drawMeeting() {
    const box = $("meeting");
    box.textContent = "";
    const m = lastMeeting();
    if (!m) { box.append(el("p", { class: "note", text: "no meeting yet" })); return; }
    box.append(el("p", { id: "meeting-head" }, el("a", { href: "#", on: { click: (e) => { e.preventDefault(); setStep(m.step); } } }, `meeting ${m.n}`),
      ` at step ${m.step}: ${m.caller} ${m.reason === "report" ? "reported the body of " + m.body : "called an emergency meeting"}`));
    box.append(el("ol", { id: "transcript", class: "transcript" }, m.lines.map((l) =>
      el("li", { class: l.text === null ? "pass" : "say" }, el("b", { style: `color:${colorOf(l.speaker)}`, text: l.speaker }), ": ",
        el("span", { class: "text", text: l.text === null ? "(passes)" : l.text }),
        (l.claims || []).length ? el("div", { class: "claims" }, l.claims.map(claimChip)) : null))));
    box.append(el("table", { id: "votes", class: "votes" },
      el("thead", {}, el("tr", {}, el("th", { text: "voter" }), el("th", { text: "vote" }))),
      el("tbody", {}, m.votes.map((v) => el("tr", {}, el("td", { text: v.voter }), el("td", { text: v.missing ? "(no vote)" : v.target }))))));
    if (m.ejection) box.append(el("p", { id: "ejection", text: m.ejection.text || "" }));
  }

  const MARK = { TRUE: "✓", FALSE: "✗", UNSUPPORTED: "~", UNVERIFIABLE: "?" };
  function claimChip(c) {
    // A claim as a chip; its verdict (✓ TRUE, ✗ FALSE, ~ UNSUPPORTED, ? UNVERIFIABLE), the checker's reason and
    // the speaker's private label only with "reveal truth". A click goes to the step of the claim's time and
    // draws the claim on the map (drawClaim); a second click takes it off.
    const truth = S.truth && c.verdict;
    const cls = "claim " + (truth ? "v-" + c.verdict.toLowerCase() : "hidden") + (S.claim === c ? " sel" : "");
    const title = truth ? `${c.verdict}: ${c.reason || ""}` + (c.epistemic ? ` (${c.epistemic})` : "") +
      (c.grounded !== null && c.grounded !== undefined ? (c.grounded ? " (grounded)" : " (not grounded)") : "") : c.text;
    return el("span", { class: cls, title, "data-verdict": truth ? c.verdict : "",
      on: { click: () => {
        S.claim = S.claim === c ? null : c;
        if (S.claim && c.t !== null && c.t !== undefined) setStep(stepAt(c.t * D.ticks_per_second)); else update();
      } } },
      truth ? el("b", { class: "mark", text: MARK[c.verdict] || "" }) : null, c.text,
      truth && c.label ? el("i", { class: "label", text: " " + c.label }) : null);
  }
  function stepAt(tick) {
    let s = 0;
    for (const t of D.tracks) if (t.t !== undefined && t.t <= tick && t.a !== "meeting") s = t.s;
    return s;
  }

  function loadCalls(name) {
    const c = D.calls[name];
    if (!c || CALLS[name] || c.loading) return;
    c.loading = true;
    const s = document.createElement("script");
    s.src = c.file;
    s.onerror = () => { CALLS[name] = []; c.failed = true; drawCalls(); };
    document.head.append(s);
  }
  function partText(m) {
    if (typeof m.content === "string") return [el("pre", { class: "prompt", text: m.content })];
    return (m.content || []).map((p) => p.type === "image"
      ? (p.missing ? el("p", { class: "missing", text: `missing frame: ${p.path}` }) : el("img", { src: p.path, class: "thumb", alt: p.path, title: p.path }))
      : el("pre", { class: "prompt", text: p.text || "" }));
  }
  function drawCalls() {
    const box = $("calls");
    box.textContent = "";
    $("calls-title").textContent = `Calls of ${S.p || "?"} at step ${S.step}`;
    const info = D.calls[S.p];
    if (!info) { box.append(el("p", { class: "note", text: Object.keys(D.calls).length ? `${S.p} made no calls` : "this match has no call records" })); return; }
    if (!CALLS[S.p]) { box.append(el("p", { class: "note", text: "loading calls…" })); loadCalls(S.p); return; }
    if (info.failed) { box.append(el("p", { class: "missing", text: `cannot load ${info.file}` })); return; }
    const here = CALLS[S.p].filter((c) => c.step === S.step);
    if (!here.length) {
      const next = info.steps.find((s) => s > S.step);
      box.append(el("p", { class: "note" }, `no calls of ${S.p} at step ${S.step}`,
        next !== undefined ? el("a", { href: "#", on: { click: (e) => { e.preventDefault(); setStep(next); } } }, ` · next at step ${next}`) : ""));
      return;
    }
    for (const c of here) {
      const fb = c.fallback ? el("span", { class: "fallback", text: ` fallback: ${c.fallback_reason || "yes"}` }) : null;
      box.append(el("div", { class: "call", "data-module": c.module },
        el("div", { class: "callhead" }, el("b", { class: "module", text: c.module }), ` · ${c.phase} · ${fmt(c.latency_s)} s · ${c.model || ""}`, fb,
          c.error ? el("span", { class: "error", text: ` error: ${c.error}` }) : null),
        el("details", {}, el("summary", {}, "prompt"), (c.messages || []).map((m) => el("div", { class: "msg" }, el("i", { text: m.role }), partText(m)))),
        el("div", {}, el("i", { text: "raw output" }), el("pre", { class: "raw", text: c.raw_output === null ? "(none: the call failed)" : c.raw_output })),
        el("div", {}, el("i", { text: "parsed" }), el("pre", { class: "parsed", text: JSON.stringify(c.parsed, null, 1) }))));
    }
  }

  function drawMemory() {
    const box = $("memory");
    box.textContent = "";
    let last = null;
    for (const r of D.memory) if (r.agent === S.p && r.step <= S.step) last = r;
    const b = last && last.memory && last.memory.beliefs;
    if (!b) return;
    box.append(el("h2", { text: `${S.p}'s suspicions after meeting ${last.meeting}` }),
      el("table", { class: "votes" }, el("tbody", {}, Object.entries(b).map(([n, v]) => el("tr", {}, el("td", { text: n }), el("td", { text: fmt(v.suspicion) }))))));
  }

  function drawBeliefs() {
    const box = $("beliefs-box");
    box.textContent = "";
    if (!D.probes) return;  // no probes.jsonl: no panel
    const mine = D.probes.filter((r) => r.agent === S.p);
    box.append(el("h2", { text: `Beliefs of ${S.p}: P(imposter)` }));
    if (!mine.length) {
      const who = [...new Set(D.probes.map((r) => r.agent))];
      box.append(el("p", { class: "note", text: `no probes of ${S.p}` + (who.length ? ` (probed: ${who.join(", ")})` : "") }));
      return;
    }
    const W = 360, H = 150, L = D.last_step || 1;
    const X = (s) => 30 + (s / L) * (W - 40), Y = (p) => 10 + (1 - p) * (H - 30);
    const g = svg("svg", { id: "beliefs", viewBox: `0 0 ${W} ${H}`, width: W, height: H },
      svg("line", { x1: 30, y1: Y(0), x2: W - 10, y2: Y(0), class: "axis" }), svg("line", { x1: 30, y1: Y(0), x2: 30, y2: Y(1), class: "axis" }),
      svg("text", { x: 2, y: Y(1) + 4, class: "tick" }, "1"), svg("text", { x: 2, y: Y(0) + 4, class: "tick" }, "0"));
    const series = {};
    for (const r of mine) for (const [n, p] of Object.entries(r.p)) (series[`${r.source}|${n}`] = series[`${r.source}|${n}`] || []).push([r.step, p]);
    for (const [k, pts] of Object.entries(series)) {
      const [src, n] = k.split("|");
      pts.sort((a, b) => a[0] - b[0]);
      g.append(svg("polyline", { points: pts.map(([s, p]) => `${X(s)},${Y(p)}`).join(" "), stroke: colorOf(n), class: "curve " + (src === "model" ? "model" : "ideal"), "data-source": src, "data-target": n },
        svg("title", {}, `${src}: ${n}` + (S.roles ? ` (${roleOf(n)})` : ""))));
    }
    g.append(svg("line", { x1: X(S.step), y1: Y(0), x2: X(S.step), y2: Y(1), class: "cursor" }));
    const sources = [...new Set(mine.map((r) => r.source))];
    box.append(g, el("p", { class: "note", text: `solid: model; dashed: ${sources.filter((s) => s !== "model").join(", ") || "none"}` }));
  }

  function update() {
    $("slider").value = S.step;
    $("steplabel").textContent = `step ${S.step} / ${D.last_step}`;
    $("reveal").checked = S.roles;
    $("reveal-truth").checked = S.truth;
    document.body.classList.toggle("roles", S.roles);
    if (S.rolesDrawn !== S.roles) { buildTimeline(); S.rolesDrawn = S.roles; }
    drawMap(); drawPlayers(); markTimeline(); drawFrames(); drawMeeting(); drawCalls(); drawMemory(); drawBeliefs();
    writeHash();
  }

  /* ------------------------------------------------------------------ run page */
  function startRun(app) {
    const q = new URLSearchParams(location.hash.slice(1));
    app.append(...[el("header", {}, el("h1", {}, `${D.format === "mau.eval" ? "eval" : "collect"} run `, el("span", { text: D.name })),
      el("div", { class: "facts", text: `${D.matches.length} matches` + (D.planned ? ` of ${D.planned} planned` : "") })),
    problemsBox(D.problems), summaryBox()].filter(Boolean));
    const outcomes = [...new Set(D.matches.map((m) => m.outcome || "not played"))].sort();
    const filt = el("input", { id: "filter", type: "search", placeholder: "filter: id, model, seed, …", value: q.get("q") || "" });
    const sel = el("select", { id: "outcome-filter" }, el("option", { value: "", text: "every outcome" }), outcomes.map((o) => el("option", { value: o, text: o })));
    sel.value = q.get("outcome") || "";
    const count = el("span", { id: "shown" });
    const eval_ = D.format === "mau.eval";
    const cols = eval_ ? ["id", "outcome", "arm", "imposter", "seed", "steps", "kills", "problems"]
      : ["id", "outcome", "imposter", "crewmate", "case", "seed", "steps", "kills", "problems"];
    // Matches with structured claims: how many the checker found false or unsupported (docs/claims.md).
    if (D.matches.some((m) => m.false_claims !== null && m.false_claims !== undefined)) cols.splice(cols.indexOf("kills") + 1, 0, "false_claims");
    const tbody = el("tbody");
    for (const m of D.matches) {
      const tr = el("tr", { class: "m", "data-id": m.id, "data-text": Object.values(m).join(" ").toLowerCase(), "data-outcome": m.outcome || "not played" },
        cols.map((c) => el("td", {}, c === "id" && m.href ? el("a", { href: m.href, class: "mlink", text: m.id })
          : c === "outcome" && !m.outcome ? el("i", { text: "not played" }) : fmt(m[c]))));
      tbody.append(tr);
    }
    const apply = () => {
      const t = filt.value.trim().toLowerCase(), o = sel.value;
      let n = 0;
      for (const tr of tbody.children) {
        const ok = (!t || t.split(/\s+/).every((w) => tr.dataset.text.includes(w))) && (!o || tr.dataset.outcome === o);
        tr.hidden = !ok; n += ok;
      }
      count.textContent = `${n} of ${D.matches.length} shown`;
      const h = new URLSearchParams();
      if (t) h.set("q", filt.value.trim());
      if (o) h.set("outcome", o);
      history.replaceState(null, "", h.toString() ? "#" + h.toString() : location.pathname);
    };
    filt.addEventListener("input", apply);
    sel.addEventListener("change", apply);
    app.append(el("h2", { text: "Matches" }), el("div", { class: "controls" }, filt, sel, count),
      el("table", { id: "matches", class: "matches" }, el("thead", {}, el("tr", {}, cols.map((c) => el("th", { text: c })))), tbody));
    apply();
  }

  function summaryBox() {
    const box = el("section", { id: "summary" });
    const s = D.summary;
    if (D.results && D.results.length) {
      const metrics = [...new Set(D.results.map((r) => r.metric))];
      const sel = el("select", { id: "metric" }, metrics.map((m) => el("option", { value: m, text: m })));
      const tb = el("tbody");
      const draw = () => {
        tb.textContent = "";
        for (const r of D.results.filter((r) => r.metric === sel.value))
          tb.append(el("tr", {}, el("td", { text: r.arm }), el("td", { text: r.imposter }), el("td", { text: fmt(+r.value) }),
            el("td", { text: r.ci_low !== "" ? `[${fmt(+r.ci_low)}, ${fmt(+r.ci_high)}]` : "–" }), el("td", { text: r.n }), el("td", { text: r.method || "" })));
      };
      sel.addEventListener("change", draw);
      box.append(el("h2", { text: "Results (95% intervals)" }), sel,
        el("table", { id: "results", class: "votes" }, el("thead", {}, el("tr", {}, ["arm", "imposter", "value", "95% CI", "n", "method"].map((c) => el("th", { text: c })))), tb));
      draw();
    }
    if (s) {
      box.append(el("h2", { text: "Summary" }),
        el("p", { text: `crew win rate ${fmt(s.crew_win_rate)}; outcomes: ` + Object.entries(s.outcomes || {}).map(([k, v]) => `${k} ${v}`).join(", ") }));
      const rows = [];
      for (const [m, roles] of Object.entries(s.win_rates || {}))
        for (const [role, r] of Object.entries(roles)) rows.push(el("tr", {}, el("td", { text: m }), el("td", { text: role }), el("td", { text: `${r.wins} / ${r.n}` }),
          el("td", { text: fmt(r.rate) }), el("td", { text: r.ci95 ? `[${fmt(r.ci95[0])}, ${fmt(r.ci95[1])}]` : "–" })));
      if (rows.length) box.append(el("table", { id: "winrates", class: "votes" }, el("thead", {}, el("tr", {}, ["model", "role", "wins / n", "win rate", "95% CI"].map((c) => el("th", { text: c })))), el("tbody", {}, rows)));
    }
    if (!s && !(D.results && D.results.length)) box.append(el("p", { class: "note", text: "no summary or results in this run folder (yet)" }));
    return box;
  }
})();
