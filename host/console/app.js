// brainscan console: a single page over the public API (/api/v1) and the admin API
// (/admin/v1). No build step and no dependencies: the file the binary embeds is the file that
// runs. Everything from the API is put into the page as text (textContent), never as HTML.
//
// Two ways in: a person signs in with email and password (or a one-time link), and the page
// calls the same API under /console/api/v1 with the session cookie, its CSRF token on writes
// and the chosen organisation; scans started so count against the organisation's plan. Or an
// API key is pasted, and the page calls /api/v1 with it, billed from the wallet.

const KEY = "brainscan.key";
const ADMIN = "brainscan.admin";
const ORG = "brainscan.org";
// The signed-in person (GET /console/session/me), or null with an API key or signed out.
let me = null;

function currentOrg() {
  if (!me || !me.orgs.length) return null;
  return me.orgs.find((o) => o.id === sessionStorage.getItem(ORG)) || me.orgs[0];
}

async function loadMe() {
  const r = await fetch("/console/session/me", { credentials: "same-origin" });
  me = r.ok ? await r.json() : null;
  return me;
}
const LENS_COLOURS = ["#ffc43d", "#56ccf2", "#6fcf97", "#ff79c6", "#bb86fc", "#ff914d"];
// The benchmark labels' score ranges, shaded behind a lens's curve (GET /lenses gives the
// scores where the labels change: the corpus's 20th, 40th, 70th and 90th percentiles).
function benchmarkBands(b) {
  return [
    { from: 0, to: b.p20, fill: "rgba(255,107,107,.13)", label: "well below average" },
    { from: b.p20, to: b.p40, fill: "rgba(255,107,107,.06)", label: "below average" },
    { from: b.p40, to: b.p70, fill: "rgba(255,255,255,.05)", label: "average" },
    { from: b.p70, to: b.p90, fill: "rgba(111,207,151,.07)", label: "above average" },
    { from: b.p90, to: 100, fill: "rgba(111,207,151,.14)", label: "well above average" },
  ];
}
const SVG = "http://www.w3.org/2000/svg";

let timer = null; // the page's refresh timer, cleared on every navigation

// ---------- helpers ----------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c) node.append(c);
  return node;
}

function clock(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = !message;
}

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error;
  }
}

// One call to the service. Errors surface as the API's own message.
async function api(path, { method = "GET", body, admin = false, raw, session = false } = {}) {
  const headers = {};
  let base = admin ? "/admin/v1" : "/api/v1";
  if (session) {
    base = "/console/session";
  } else if (me && !admin) {
    base = "/console/api/v1";
    const org = currentOrg();
    if (org) headers["X-Brainscan-Org"] = org.id;
  } else {
    const token = sessionStorage.getItem(admin ? ADMIN : KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
  }
  if (me && method !== "GET") headers["X-CSRF-Token"] = me.csrf_token;
  let payload;
  if (raw !== undefined) {
    headers["Content-Type"] = "application/wasm";
    payload = raw;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const r = await fetch(base + path, { method, headers, body: payload, credentials: "same-origin" });
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { message: text }; }
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

async function guarded(work) {
  try {
    showError("");
    return await work();
  } catch (e) {
    showError(e.message || String(e));
    if (e.status === 401 && !sessionStorage.getItem(KEY)) { me = null; location.hash = "#/signin"; }
    return undefined;
  }
}

function page(title, ...children) {
  const main = document.getElementById("main");
  main.replaceChildren(el("h1", { text: title }), ...children);
  return main;
}

// ---------- charts ----------

// A line chart of per-second curves (0-100). `options.onSeek(second)` is called on a click.
function lineChart(series, options = {}) {
  const W = 900, H = options.height || 240, L = 34, R = 10, T = 10, B = 24;
  const n = Math.max(1, ...series.map((s) => s.values.length));
  const x = (s) => L + (s / Math.max(1, n - 1)) * (W - L - R);
  const y = (v) => T + (1 - v / 100) * (H - T - B);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", id: options.id, role: "img",
    "aria-label": options.label || "lens scores per second" });
  for (const v of [0, 25, 50, 75, 100]) {
    root.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#2c2f38" }));
    const t = svg("text", { x: 4, y: y(v) + 4 }); t.textContent = v; root.append(t);
  }
  const step = Math.max(1, Math.ceil(n / 12));
  for (let s = 0; s < n; s += step) {
    const t = svg("text", { x: x(s) - 10, y: H - 6 }); t.textContent = clock(s); root.append(t);
  }
  for (const band of options.bands || []) {
    const r = svg("rect", { class: "band", x: L, y: y(band.to), width: W - L - R,
      height: Math.max(0, y(band.from) - y(band.to)), fill: band.fill, "data-label": band.label });
    const title = svg("title"); title.textContent = `${band.label}: ${band.from}–${band.to}`; r.append(title);
    root.append(r);
  }
  for (const w of options.windows || []) {
    const r = svg("rect", { class: "buy", x: x(w.start), y: T, width: Math.max(2, x(w.end) - x(w.start)),
      height: H - T - B, "data-start": w.start, "data-end": w.end });
    const title = svg("title"); title.textContent = w.title; r.append(title);
    root.append(r);
  }
  for (const s of series) {
    const pts = s.values.map((v, i) => (Number.isFinite(v) ? `${x(i)},${y(v)}` : null)).filter(Boolean);
    root.append(svg("path", { class: `curve ${s.dashed ? "dashed" : ""}`, d: `M${pts.join("L")}`,
      stroke: s.colour, "stroke-dasharray": s.dashed ? "6 4" : null, "data-lens": s.name }));
  }
  for (const m of options.moments || []) {
    const c = svg("circle", { class: "moment", cx: x(m.second), cy: y(m.value), r: 6, fill: m.colour,
      tabindex: 0, "data-second": m.second, "data-lens": m.lens, role: "button",
      "aria-label": `${clock(m.second)}: ${m.reason}` });
    const title = svg("title"); title.textContent = `${clock(m.second)} ${m.reason}`; c.append(title);
    const seek = (ev) => { ev.stopPropagation(); options.onSeek && options.onSeek(m.second); };
    c.addEventListener("click", seek);
    c.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") seek(ev); });
    root.append(c);
  }
  const head = svg("line", { id: options.playheadId || null, class: "playhead", x1: x(0), x2: x(0),
    y1: T, y2: H - B, "data-second": 0 });
  root.append(head);
  root.setPlayhead = (second) => {
    const px = x(Math.min(n - 1, Math.max(0, second)));
    head.setAttribute("x1", px); head.setAttribute("x2", px);
    head.setAttribute("data-second", Math.floor(second));
  };
  if (options.onSeek) {
    root.addEventListener("click", (ev) => {
      const box = root.getBoundingClientRect();
      const px = ((ev.clientX - box.left) / box.width) * W;
      const s = Math.round(((px - L) / (W - L - R)) * (n - 1));
      options.onSeek(Math.min(n - 1, Math.max(0, s)));
    });
  }
  return root;
}

function legend(series) {
  return el("div", { class: "legend" },
    series.map((s) => el("span", { style: `--c:${s.colour}`, text: s.name })));
}

// ---------- pages ----------

function signin(note) {
  const email = el("input", { id: "email", type: "email", autocomplete: "username", required: true, placeholder: "you@example.com" });
  const password = el("input", { id: "password", type: "password", autocomplete: "current-password", required: true });
  const people = el("form", { id: "signin-person", class: "card", onsubmit: async (ev) => {
    ev.preventDefault();
    const who = await guarded(() => api("/sign-in", { method: "POST", session: true,
      body: { email: email.value.trim(), password: password.value } }));
    password.value = "";
    if (who) {
      me = who;
      sessionStorage.removeItem(KEY);
      chrome();
      location.hash = "#/scans";
    }
  } },
  el("h2", { text: "Sign in to your account" }),
  el("label", { for: "email", text: "Email" }), email,
  el("label", { for: "password", text: "Password" }), password,
  el("p", { class: "muted", text: "Scans you start here count against your organisation's plan, not its wallet." }),
  el("button", { id: "signin-email", class: "primary", type: "submit", text: "Sign in" }));
  const key = el("input", { id: "key", type: "password", autocomplete: "off", placeholder: "sk_live_…" });
  const admin = el("input", { id: "admin-token", type: "password", autocomplete: "off",
    placeholder: "optional: BRAINSCAN_ADMIN_TOKEN" });
  const form = el("form", { class: "card", onsubmit: async (ev) => {
    ev.preventDefault();
    me = null;
    sessionStorage.setItem(KEY, key.value.trim());
    if (admin.value.trim()) sessionStorage.setItem(ADMIN, admin.value.trim());
    else sessionStorage.removeItem(ADMIN);
    const ok = await guarded(() => api("/wallet"));
    if (ok) { chrome(); location.hash = "#/scans"; }
    else sessionStorage.removeItem(KEY);
  } },
  el("h2", { text: "Or use an API key" }),
  el("label", { for: "key", text: "API key" }), key,
  el("label", { for: "admin-token", text: "Admin token (operator pages)" }), admin,
  el("p", { class: "muted", text: "Kept in this tab's session storage only, and sent only to this service. Scans started with a key are billed from the wallet." }),
  el("button", { id: "signin", class: "primary", type: "submit", text: "Sign in with the key" }));
  page("Sign in", note ? el("p", { id: "signin-note", class: "card", text: note }) : "", people, form);
  email.focus();
}

// What the plan allows this month, in words, and whether a console scan can still start.
function planLine(org) {
  const left = org.monthly_scans - org.used_this_month;
  const plan = org.plan[0].toUpperCase() + org.plan.slice(1);
  const text = left > 0
    ? `${plan} plan: ${org.used_this_month} of ${org.monthly_scans} console scans used this month (${org.month}); ${left} left.`
    : `${plan} plan: all ${org.monthly_scans} console scan${org.monthly_scans === 1 ? "" : "s"} of ${org.month} used. The allowance renews on the 1st (UTC); a paid plan has more, and API scans are billed from the wallet instead.`;
  return { text, left };
}

async function account() {
  await loadMe();
  if (!me) { location.hash = "#/signin"; return; }
  const org = currentOrg();
  const picker = el("select", { id: "org-picker", onchange: () => { sessionStorage.setItem(ORG, picker.value); account(); } },
    me.orgs.map((o) => el("option", { value: o.id, text: `${o.name} (${o.role})`, selected: org && o.id === org.id })));
  const keysCard = el("section", { id: "keys", class: "card" }, el("h2", { text: "API keys" }));
  page("Account",
    el("section", { class: "card" }, el("dl", { class: "kv" },
      el("dt", { text: "Signed in as" }), el("dd", { id: "account-email", text: me.email }),
      el("dt", { text: "Organisation" }), el("dd", {}, org ? picker : "none yet: ask the operator to add you"),
      el("dt", { text: "Plan" }), el("dd", { id: "account-plan", text: org ? planLine(org).text : "–" }))),
    keysCard);
  if (!org) return;
  if (org.role !== "owner") {
    keysCard.append(el("p", { class: "muted", text: "Only an owner of this organisation manages its API keys." }));
    return;
  }
  if (!org.can_create_keys) {
    keysCard.append(el("p", { id: "keys-plan-needed", text: "API keys come with a paid plan (Pro or Studio). This organisation is on the Free plan: ask the operator to change it. Scans from this console need no key." }));
  }
  const shown = el("div", { id: "new-key" });
  const name = el("input", { id: "key-name", maxlength: 100, required: true, placeholder: "e.g. CI pipeline" });
  const list = el("tbody", { id: "key-list" });
  if (org.can_create_keys) {
    keysCard.append(el("form", { onsubmit: async (ev) => {
      ev.preventDefault();
      const made = await guarded(() => api(`/orgs/${encodeURIComponent(org.id)}/keys`, { method: "POST", session: true, body: { name: name.value.trim() } }));
      if (!made) return;
      name.value = "";
      shown.replaceChildren(el("p", { text: `Key "${made.name}" created. Copy it now: it is shown this once and never again.` }),
        el("code", { id: "new-key-secret", text: made.key }));
      load();
    } }, el("label", { for: "key-name", text: "New key's name" }), name,
      el("p", {}, el("button", { id: "key-create", class: "primary", type: "submit", text: "Create key" }))), shown);
  }
  keysCard.append(el("table", {}, el("thead", {}, el("tr", {}, ["Key", "Name", "Created", "State", ""].map((h) => el("th", { text: h })))), list));
  async function load() {
    const data = await guarded(() => api(`/orgs/${encodeURIComponent(org.id)}/keys`, { session: true }));
    if (!data) return;
    list.replaceChildren(...data.keys.map((k) => el("tr", { "data-key-id": k.id },
      el("td", { text: k.id }), el("td", { text: k.name || `(${k.made_in})` }), el("td", { class: "muted", text: k.created_at }),
      el("td", { class: "state", text: k.revoked_at ? `revoked ${k.revoked_at}` : "active" }),
      el("td", {}, k.revoked_at ? "" : el("button", { class: "revoke", type: "button", text: "Revoke",
        onclick: async () => { await guarded(() => api(`/orgs/${encodeURIComponent(org.id)}/keys/${encodeURIComponent(k.id)}`, { method: "DELETE", session: true })); load(); } })))));
  }
  await load();
}

async function scans(offset = 0) {
  const limit = 10;
  const lenses = await guarded(() => api("/lenses"));
  const list = el("tbody", { id: "scan-list" });
  const url = el("input", { id: "submit-url", type: "url", required: true, placeholder: "https://cdn.example.com/ad.mp4" });
  const kind = el("select", { id: "submit-type" }, ["video", "audio", "url"].map((k) => el("option", { value: k, text: k })));
  const lensBoxes = (lenses ? lenses.lenses : []).map((l) => el("label", {},
    el("input", { type: "checkbox", name: "lens", value: l, checked: lenses.default.includes(l) }), l));
  const option = (id, name, checked) => el("label", {}, el("input", { type: "checkbox", id, checked }), name);
  const webhook = el("input", { id: "submit-webhook", type: "url", placeholder: "optional: https://hooks.example.com/brainscan" });
  const form = el("form", { id: "submit-form", class: "card", onsubmit: async (ev) => {
    ev.preventDefault();
    const field = kind.value === "url" ? "url" : `${kind.value}_url`;
    const body = {
      input: { type: kind.value, [field]: url.value.trim() },
      lenses: lensBoxes.map((l) => l.querySelector("input")).filter((i) => i.checked).map((i) => i.value),
      options: {
        include_reasons: document.getElementById("opt-reasons").checked,
        include_benchmark: document.getElementById("opt-benchmark").checked,
        include_raw: document.getElementById("opt-raw").checked,
        include_fmri: document.getElementById("opt-fmri").checked,
      },
    };
    if (webhook.value.trim()) body.webhook_url = webhook.value.trim();
    const created = await guarded(() => api("/scans", { method: "POST", body }));
    if (created) { url.value = ""; refresh(); }
    if (me) showPlan();
  } },
  el("h2", { text: "New scan" }),
  el("label", { for: "submit-url", text: "Media URL" }), url,
  el("label", { for: "submit-type", text: "Type" }), kind,
  el("label", { text: "Lenses" }), el("div", { class: "checks" }, lensBoxes),
  el("label", { text: "Options" }), el("div", { class: "checks" },
    option("opt-reasons", "reasons", true), option("opt-benchmark", "benchmark", true),
    option("opt-raw", "raw networks", false), option("opt-fmri", "cortex video", true)),
  el("label", { for: "submit-webhook", text: "Webhook URL" }), webhook,
  el("p", {}, el("button", { id: "submit-button", class: "primary", type: "submit", text: "Scan ($2.50 on first fetch)" })),
  el("p", { id: "plan-line", class: "muted" }));
  const pager = el("div", { class: "pager" });
  page("Scans", form, el("div", { class: "card" }, el("table", {},
    el("thead", {}, el("tr", {}, el("th", { text: "Scan" }), el("th", { text: "Status" }),
      el("th", { text: "Progress" }), el("th", { class: "optional", text: "Created" }), el("th", { text: "" }))),
    list), pager));

  // Signed in: the scan counts against the plan, and the page says how much is left.
  async function showPlan() {
    await loadMe();
    const org = currentOrg();
    const button = document.getElementById("submit-button");
    const line = document.getElementById("plan-line");
    if (!org || !button || !line) return;
    const { text, left } = planLine(org);
    line.textContent = text;
    button.textContent = "Scan (counts against your plan)";
    button.disabled = left <= 0;
  }
  if (me) await showPlan();

  async function refresh() {
    const data = await guarded(() => api(`/scans?limit=${limit}&offset=${offset}`));
    if (!data) return;
    list.replaceChildren(...data.scans.map((s) => {
      const live = s.status === "queued" || s.status === "processing";
      return el("tr", { "data-scan-id": s.scan_id },
        el("td", {}, el("a", { class: "open", href: `#/scan/${s.scan_id}`, text: s.scan_id })),
        el("td", { class: `status status-${s.status}`, text: s.status }),
        el("td", { class: "progress" }, el("div", { class: "bar", title: `${s.progress ?? 0}%` },
          el("span", { style: `width:${s.progress ?? (s.status === "complete" ? 100 : 0)}%` }))),
        el("td", { class: "optional muted", text: s.created_at || "" }),
        el("td", {}, live ? el("button", { class: "cancel", type: "button", text: "Cancel",
          onclick: async () => { await guarded(() => api(`/scans/${s.scan_id}/cancel`, { method: "POST" })); refresh(); } }) : ""));
    }));
    pager.replaceChildren(
      el("button", { id: "prev", type: "button", disabled: offset === 0, text: "Newer",
        onclick: () => scans(Math.max(0, offset - limit)) }),
      el("span", { class: "muted", text: `${data.total ? offset + 1 : 0}–${Math.min(data.total, offset + limit)} of ${data.total}` }),
      el("button", { id: "next", type: "button", disabled: offset + limit >= data.total, text: "Older",
        onclick: () => scans(offset + limit) }));
    clearTimeout(timer);
    if (data.scans.some((s) => s.status === "queued" || s.status === "processing")) {
      timer = setTimeout(refresh, 1500);
    }
  }
  await refresh();
}

function provenanceCard(p) {
  const model = p.model || {};
  const ev = model.evaluation || {};
  const dl = el("dl", { class: "kv" });
  const row = (k, v) => { if (v !== undefined && v !== null && v !== "") dl.append(el("dt", { text: k }), el("dd", { text: v })); };
  row("Model", `${model.id || "?"} (${model.source === "prior" ? "weights are a prior, not fitted to brain data" : model.source || "?"})`);
  row("How it was made", model.summary);
  if (ev.zero_shot_mean_r !== undefined) {
    row("Checked on real fMRI", `${ev.dataset || "held-out fMRI"}: predicted vs measured r = ${ev.zero_shot_mean_r} (loudness alone: ${ev.loudness_only_mean_r}; ceiling ${ev.ceiling_loso_isc})`);
  }
  row("Adapter", p.adapter);
  if (p.transcript) row("Transcript", typeof p.transcript === "string" ? p.transcript : (p.transcript.source || JSON.stringify(p.transcript)));
  if (p.benchmark) row("Benchmarks", `${p.benchmark.corpus_clips} clips, ${p.benchmark.corpus_seconds} s of corpus, ${p.benchmark.lens_plugin}`);
  if (Array.isArray(p.plugins)) row("Plugins", p.plugins.map((x) => `${x.name}@${x.version}`).join(", "));
  return el("section", { id: "provenance", class: "card" }, el("h2", { text: "Where these numbers come from" }), dl);
}

function manipulationCard(m) {
  if (!m) return el("section", { id: "manipulation", class: "card" }, el("h2", { text: "Manipulation read" }),
    el("p", { class: "muted", text: "Not scored for this scan (ask for the manipulation lens)." }));
  return el("section", { id: "manipulation", class: "card" },
    el("h2", { text: "Manipulation read" }),
    el("p", {}, el("strong", { text: `${m.threat.label} (${m.threat.severity})` }), ` — ${m.threat.note}`),
    el("dl", { class: "kv" },
      el("dt", { text: "Conversion risk" }), el("dd", { text: `${m.conversion_risk} (${m.risk_band})` }),
      el("dt", { text: "Cognitive sovereignty" }), el("dd", { text: `${m.cognitive_sovereignty_index}` }),
      el("dt", { text: "Audience" }), el("dd", { text: m.population && (m.population.note || m.population.label || "") })),
    el("ul", {}, (m.circuits || []).map((c) => el("li", {}, el("strong", { text: `${c.label}: ` }), c.meaning))),
    (m.tactics || []).length ? el("p", { class: "muted", text: `Tactics: ${m.tactics.map((t) => t.label || t.name).join(", ")}` }) : "");
}

async function scan(id) {
  const s = await guarded(() => api(`/scans/${encodeURIComponent(id)}`));
  if (!s) { page("Scan"); return; }
  if (s.status !== "complete") {
    page(`Scan ${id}`, el("div", { class: "card" },
      el("p", { id: "scan-status", class: `status-${s.status}`, text: `${s.status}${s.stage ? ` (${s.stage})` : ""}${s.error ? `: ${s.error}` : ""}` }),
      el("div", { class: "bar" }, el("span", { style: `width:${s.progress || 0}%` }))));
    if (s.status === "queued" || s.status === "processing") timer = setTimeout(() => scan(id), 1500);
    return;
  }
  const lenses = s.lenses;
  const series = lenses.map((l, i) => ({ name: l, colour: LENS_COLOURS[i % LENS_COLOURS.length],
    values: s.timeline.map((t) => t.scores[l]) }));
  const first = lenses[0];
  const lensList = await guarded(() => api("/lenses"));
  const firstBands = lensList && lensList.benchmark_bands && lensList.benchmark_bands[first];
  const bands = firstBands ? benchmarkBands(firstBands) : [];
  const moments = (s.moments || []).map((m) => ({ second: m.second, lens: m.lens, reason: m.reason,
    value: (s.timeline[m.second] || { scores: {} }).scores[m.lens] ?? 50,
    colour: LENS_COLOURS[Math.max(0, lenses.indexOf(m.lens)) % 6] }));
  const windows = (s.buy_moments || []).map((b) => ({ start: b.start_sec, end: b.end_sec,
    title: `${clock(b.start_sec)}–${clock(b.end_sec)} ${b.strength}: ${b.insight}` }));

  const video = s.fmri_url ? el("video", { id: "cortex", src: s.fmri_url, poster: s.fmri_poster_url,
    controls: true, preload: "auto", muted: true, playsinline: true }) : null;
  const lines = (s.transcript || []).map((l) => el("li", { "data-start": l.start_sec, "data-end": l.end_sec,
    tabindex: 0, onclick: () => seek(l.start_sec), onkeydown: (ev) => { if (ev.key === "Enter") seek(l.start_sec); } },
    el("time", { text: clock(l.start_sec) }), l.text));
  const transcript = el("ol", { id: "transcript" }, lines.length ? lines : el("li", { class: "muted", text: "No speech in this clip." }));
  const readout = el("p", { id: "playhead-readout", class: "muted", text: "0:00" });
  const chart = lineChart(series, { id: "chart", playheadId: "playhead", bands, moments, windows,
    label: "lens scores per second with moments and buy windows", onSeek: (sec) => seek(sec) });

  function setPlayhead(t) {
    chart.setPlayhead(t);
    readout.textContent = `${clock(t)} — ${lenses.map((l) => `${l} ${Math.round((s.timeline[Math.min(s.timeline.length - 1, Math.floor(t))] || { scores: {} }).scores[l] ?? 0)}`).join(" · ")}`;
    for (const li of lines) {
      const on = t >= Number(li.dataset.start) && t < Number(li.dataset.end) + 0.5;
      li.classList.toggle("current", on);
      // Scroll the list, not the page: the chart the user clicked stays in view.
      if (on) transcript.scrollTop = li.offsetTop - transcript.offsetTop;
    }
  }
  function seek(t) {
    setPlayhead(t);
    if (video) { try { video.currentTime = t; } catch { /* not loaded yet */ } }
  }
  if (video) video.addEventListener("timeupdate", () => setPlayhead(video.currentTime));

  page(`Scan ${id}`,
    el("div", { class: "card", id: "summary" },
      el("p", {}, el("strong", { text: `Overall ${s.overall_score ?? "–"} (${s.grade ?? "–"})` }),
        ` · ${s.duration_sec} s · ${lenses.join(", ")}`),
      el("p", { text: s.summary || "" })),
    el("div", { class: "grid" },
      el("section", { class: "card" }, el("h2", { text: "Cortex (model predictions)" }),
        video || el("p", { class: "muted", text: "Created without include_fmri: no cortex video." })),
      el("section", { class: "card" }, el("h2", { text: "Transcript" }), transcript)),
    el("section", { class: "card" }, el("h2", { text: "Lens scores" }), legend(series), chart, readout,
      el("p", { class: "muted", text: bands.length
        ? `Shaded bands: the benchmark corpus's ranges for ${first} (red below average, grey average, green above). Green boxes: buy-moment windows. Dots: moments (hover or focus for the reason; click to jump).`
        : "Green boxes: buy-moment windows. Dots: moments (hover or focus for the reason; click to jump). No benchmark for these lenses." })),
    manipulationCard(s.manipulation),
    provenanceCard(s.provenance || {}));
}

async function compare() {
  const list = await guarded(() => api("/scans?limit=100"));
  const done = list ? list.scans.filter((s) => s.status === "complete") : [];
  const pick = (id) => el("select", { id }, done.map((s) => el("option", { value: s.scan_id, text: s.scan_id })));
  const a = pick("compare-a"), b = pick("compare-b");
  if (done.length > 1) b.selectedIndex = 1;
  const out = el("div", { id: "compare-out" });
  page("Compare", el("form", { class: "card", onsubmit: async (ev) => {
    ev.preventDefault();
    const c = await guarded(() => api(`/compare?a=${encodeURIComponent(a.value)}&b=${encodeURIComponent(b.value)}`));
    if (!c) return;
    const series = c.lenses.flatMap((l, i) => [
      { name: `${l.lens} (A)`, colour: LENS_COLOURS[i % 6], values: l.a },
      { name: `${l.lens} (B)`, colour: LENS_COLOURS[i % 6], values: l.b, dashed: true }]);
    out.replaceChildren(el("div", { class: "card" }, legend(series),
      lineChart(series, { id: "compare-chart", label: "both scans' lens curves" }),
      el("table", { id: "compare-table" },
        el("thead", {}, el("tr", {}, ["Lens", "Mean A", "Mean B", "B − A", "Most divergent seconds"].map((h) => el("th", { text: h })))),
        el("tbody", {}, c.lenses.map((l) => el("tr", { "data-lens": l.lens },
          el("td", { text: l.lens }), el("td", { text: l.mean_a }), el("td", { text: l.mean_b }),
          el("td", { class: "mean-difference", text: l.mean_difference }),
          el("td", { text: l.most_divergent.map((d) => `${clock(d.second)} (${d.difference > 0 ? "+" : ""}${d.difference})`).join(", ") })))))));
  } },
  el("label", { for: "compare-a", text: "Scan A" }), a,
  el("label", { for: "compare-b", text: "Scan B" }), b,
  el("p", {}, el("button", { id: "compare-go", class: "primary", type: "submit", text: "Compare", disabled: done.length < 1 }))), out);
}

async function wallet() {
  const w = await guarded(() => api("/wallet"));
  const intel = await guarded(() => api("/intelligence"));
  const q = el("input", { id: "recall-q", type: "search", placeholder: "where did viewers lose interest?" });
  const results = el("ol", { id: "recall-results" });
  const curves = intel ? Object.entries(intel.avg_lens_curves || {}).map(([name, values], i) =>
    ({ name, values, colour: LENS_COLOURS[i % 6] })) : [];
  page("Wallet & memory",
    w ? el("section", { id: "wallet", class: "card" }, el("dl", { class: "kv" },
      el("dt", { text: "Available" }), el("dd", { id: "wallet-available", text: `$${w.total_available_usd.toFixed(2)}` }),
      el("dt", { text: "Reserved for running or unfetched scans" }), el("dd", { id: "wallet-reserved", text: `$${w.reserved_usd.toFixed(2)}` }),
      el("dt", { text: "Deposit" }), el("dd", { text: `$${w.deposit_balance_usd.toFixed(2)}` }),
      el("dt", { text: "Free credit left this month" }), el("dd", { text: `$${w.free_credit_remaining_usd.toFixed(2)}` }),
      el("dt", { text: "Scans you can still afford" }), el("dd", { text: w.scans_remaining_estimate }))) : "",
    el("section", { id: "rollup", class: "card" }, el("h2", { text: `Across your ${intel ? intel.scan_count : 0} scans` }),
      curves.length ? [legend(curves), lineChart(curves, { id: "rollup-chart", label: "average lens curves" })] : el("p", { class: "muted", text: "No scans remembered yet." })),
    el("form", { class: "card", onsubmit: async (ev) => {
      ev.preventDefault();
      const r = await guarded(() => api(`/intelligence?q=${encodeURIComponent(q.value)}`));
      results.replaceChildren(...((r && r.recall) || []).map((h) => el("li", {},
        el("a", { href: `#/scan/${h.scan_id}`, text: `${h.scan_id} ${clock(h.second)}` }), ` (${h.kind}, ${h.score.toFixed(2)}) `, h.text)));
    } }, el("label", { for: "recall-q", text: "Search what your scans said (recall)" }), q,
      el("p", {}, el("button", { id: "recall-go", type: "submit", text: "Search" })), results));
}

async function operators() {
  if (!sessionStorage.getItem(ADMIN)) { page("Operators", el("p", { text: "Sign in with the admin token to manage plugins." })); return; }
  const plugins = el("tbody", { id: "plugins" });
  const events = el("ol", { id: "events" });
  const metrics = el("dl", { id: "metrics", class: "kv" });
  const conformance = el("div", { id: "conformance" });
  const file = el("input", { id: "upload-file", type: "file", accept: ".wasm,application/wasm" });
  page("Operators",
    el("section", { class: "card" }, el("h2", { text: "Queue and workers" }), metrics),
    el("section", { class: "card" }, el("h2", { text: "Plugins" }), el("table", {},
      el("thead", {}, el("tr", {}, ["Plugin", "Kind", "State", "Actions"].map((h) => el("th", { text: h })))), plugins)),
    el("section", { class: "card" }, el("h2", { text: "Upload a plugin" }),
      el("form", { onsubmit: async (ev) => {
        ev.preventDefault();
        if (!file.files[0]) return;
        const bytes = await file.files[0].arrayBuffer();
        const r = await guarded(() => api("/plugins", { method: "POST", admin: true, raw: bytes }));
        if (r && r.conformance) {
          conformance.replaceChildren(el("p", { text: `${r.plugin.name}@${r.plugin.version} installed${r.new ? "" : " (already present)"}` }),
            el("table", {}, el("thead", {}, el("tr", {}, ["Check", "Passed", "Detail", "ms"].map((h) => el("th", { text: h })))),
              el("tbody", {}, r.conformance.rows.map((row) => el("tr", {}, el("td", { text: row.check }),
                el("td", { text: row.passed ? "yes" : "NO" }), el("td", { text: row.detail }), el("td", { text: row.wall_ms.toFixed(1) }))))));
        }
        load();
      } }, el("label", { for: "upload-file", text: "Component (.wasm)" }), file,
        el("p", {}, el("button", { id: "upload-go", type: "submit", text: "Install (checks run first)" })), conformance)),
    el("section", { class: "card" }, el("h2", { text: "Events" }), events));

  const act = async (work) => { await guarded(work); load(); };
  async function load() {
    const list = await guarded(() => api("/plugins", { admin: true }));
    if (list) {
      plugins.replaceChildren(...list.data.map((p) => {
        const id = `${p.name}@${p.version}`;
        return el("tr", { "data-plugin": id },
          el("td", { text: id }), el("td", { text: p.kind }),
          el("td", { class: "state", text: p.active_in ? `active in ${p.active_in}` : (p.rollback_for.length ? `rollback target for ${p.rollback_for.join(", ")}` : "installed") }),
          el("td", {}, p.active_in
            ? [el("button", { class: "rollback", type: "button", "data-slot": p.active_in, text: "Roll back",
                onclick: () => act(() => api("/plugins/rollback", { method: "POST", admin: true, body: { slot: p.active_in } })) }), " ",
              el("button", { class: "deactivate", type: "button", "data-slot": p.active_in, text: "Deactivate",
                onclick: () => act(() => api("/plugins/deactivate", { method: "POST", admin: true, body: { slot: p.active_in } })) })]
            : el("button", { class: "activate", type: "button", "data-id": id, text: "Activate",
                onclick: () => act(() => api(`/plugins/${encodeURIComponent(id)}/activate`, { method: "POST", admin: true })) })));
      }));
    }
    const ev = await guarded(() => api("/plugins/events?limit=20", { admin: true }));
    if (ev) {
      events.replaceChildren(...ev.data.map((e) => el("li", { "data-action": e.action, "data-slot": e.slot },
        el("time", { text: new Date(e.at).toISOString().replace("T", " ").slice(0, 19) }), ` ${e.action} ${e.slot}: ${e.from || "–"} → ${e.to || "–"} (${e.reason})`)));
    }
    // Queue depth and workers from /metrics (Prometheus text, same origin).
    try {
      const text = await (await fetch("/metrics")).text();
      const sum = (re) => text.split("\n").filter((l) => re.test(l)).reduce((a, l) => a + Number(l.split(" ").pop()), 0);
      metrics.replaceChildren(
        el("dt", { text: "Queued scans" }), el("dd", { id: "metric-queued", text: sum(/^brainscan_scans\{status="queued"\}/) }),
        el("dt", { text: "Processing" }), el("dd", { id: "metric-processing", text: sum(/^brainscan_scans\{status="processing"\}/) }),
        el("dt", { text: "Jobs running (workers busy)" }), el("dd", { text: sum(/^brainscan_queue_jobs\{[^}]*state="running"/) }));
    } catch {
      metrics.replaceChildren(el("dd", { text: "/metrics is not served on this address (BRAINSCAN_OPS_LISTEN)." }));
    }
  }
  await load();
}

// ---------- routing ----------

function chrome() {
  const signedIn = Boolean(sessionStorage.getItem(KEY)) || Boolean(me);
  document.getElementById("signout").hidden = !signedIn;
  document.getElementById("nav-account").hidden = !me;
  document.getElementById("nav-operators").hidden = !sessionStorage.getItem(ADMIN);
  for (const a of document.querySelectorAll("nav a")) {
    const here = location.hash.startsWith(a.getAttribute("href").replace(/\/$/, ""));
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
}

async function route() {
  clearTimeout(timer);
  showError("");
  const hash = location.hash || "#/scans";
  if (!sessionStorage.getItem(KEY) && !me) await loadMe();
  const [, name, arg] = hash.split("/");
  if (!sessionStorage.getItem(KEY) && !me && name !== "signin") { location.hash = "#/signin"; return; }
  chrome();
  switch (name) {
    case "signin": return signin(arg === "link-expired"
      ? "That sign-in link has been used or has expired. Ask the operator for a new one, or sign in with your password." : "");
    case "account": return account();
    case "scan": return scan(decodeURIComponent(arg || ""));
    case "compare": return compare();
    case "wallet": return wallet();
    case "operators": return operators();
    default: return scans();
  }
}

document.getElementById("signout").addEventListener("click", async () => {
  if (me) await guarded(() => api("/sign-out", { method: "POST", session: true }));
  me = null;
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(ADMIN);
  sessionStorage.removeItem(ORG);
  location.hash = "#/signin";
});
window.addEventListener("hashchange", route);
route();
