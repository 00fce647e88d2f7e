// The edgeway dashboard: reads /api/usage with the admin key from the page's URL and draws SVG.
"use strict";
const KEY = new URLSearchParams(location.search).get("key") || "";
const NS = "http://www.w3.org/2000/svg";
const COLORS = { edge: "#3fb950", cloud: "#58a6ff", none: "#d29922", cost: "#58a6ff", counter: "#a371f7" };
// a row refused before any model (a client's 4xx, a denial): its own category, never "(none)"
const REFUSED = "refused";

async function usage(groupBy) {
  const response = await fetch(`/api/usage?group_by=${groupBy}`, { headers: { authorization: `Bearer ${KEY}` } });
  if (!response.ok) throw new Error(`/api/usage answered ${response.status}`);
  return response.json();
}

function el(name, attrs, parent, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

async function qualityReport() {
  const response = await fetch("/api/quality", { headers: { authorization: `Bearer ${KEY}` } });
  if (!response.ok) throw new Error(`/api/quality answered ${response.status}`);
  return response.json();
}

function pct(v) { return v === null || v === undefined ? "–" : `${(100 * v).toFixed(0)}%`; }

function drawQuality(q) {
  const v = q.verdicts;
  document.getElementById("q-count").textContent = `${q.comparisons} (${v.edge || 0} / ${v.tie || 0} / ${v.cloud || 0})`;
  const e = q.edge_served_as_good;
  document.getElementById("q-edge").textContent = e.of ? `${pct(e.value)} [${pct(e.low)}, ${pct(e.high)}] of ${e.of}` : "–";
  const r = q.quality_retained;
  document.getElementById("q-retained").textContent = r.value === null ? "–" : `${pct(r.value)} [${pct(r.low)}, ${pct(r.high)}]`;
  document.getElementById("q-money").textContent = `${money(q.savings_usd)} / ${money(q.shadow_usd)}`;
  const buckets = q.by_complexity;
  bars(document.getElementById("c-quality"), buckets.map(b => `${b.from.toFixed(1)}-${b.to.toFixed(1)} (${b.of})`), [
    { name: "edge as good", color: COLORS.edge, values: buckets.map(b => b.value ?? 0) }], "share");
}

function clear(svg) { while (svg.firstChild) svg.removeChild(svg.firstChild); return svg; }

function size(svg) { const box = svg.getBoundingClientRect(); return [box.width || 600, box.height || 220]; }

// Grouped vertical bars: labels on x, one bar per series, a y axis in `unit` ("$", "ms", "share").
function bars(svg, labels, series, unit) {
  clear(svg);
  const [w, h] = size(svg), pad = 64, base = h - 28, legend = 22;
  const top = Math.max(0, ...series.flatMap(s => s.values));
  const max = top || 1;  // an empty chart: its bars are all zero, and its axis says 0
  const slot = (w - pad) / Math.max(1, labels.length), bw = Math.min(40, slot / (series.length + 1));
  el("line", { x1: pad, y1: base, x2: w, y2: base, stroke: "#263040" }, svg);
  for (const [fraction, cls] of [[1, "axis-top"], [0.5, "axis-mid"], [0, "axis-zero"]]) {
    const y = base - fraction * (base - legend);
    el("line", { x1: pad - 4, y1: y, x2: w, y2: y, stroke: "#1f2833" }, svg);
    el("text", { x: pad - 6, y: y + 4, class: cls, "text-anchor": "end" }, svg, fraction ? inUnit(top * fraction, unit) : "0");
  }
  labels.forEach((label, i) => {
    series.forEach((s, j) => {
      const v = s.values[i] || 0, bh = (v / max) * (base - legend);
      const bar = el("rect", { x: pad + i * slot + j * bw + 4, y: base - bh, width: bw - 2, height: bh, fill: s.color,
                               class: "bar" }, svg);
      el("title", {}, bar, `${s.name} ${label}: ${inUnit(v, unit)}`);
    });
    const room = Math.max(4, Math.floor(slot / 7));  // characters the slot holds at 11px
    el("text", { x: pad + i * slot + 4, y: h - 10, class: "x-label" }, svg, label.length > room ? label.slice(0, room - 1) + "…" : label);
  });
  series.forEach((s, j) => {
    el("rect", { x: pad + j * 110, y: 2, width: 10, height: 10, fill: s.color }, svg);
    el("text", { x: pad + j * 110 + 14, y: 11 }, svg, s.name);
  });
}

// Horizontal bars, one a row: for many long labels (rules), which never overlap.
function hbars(svg, rows, unit) {
  clear(svg);
  const [w] = size(svg), left = Math.min(180, w / 3), rowH = 24;
  svg.setAttribute("height", Math.max(60, rows.length * rowH + 8));
  const max = Math.max(1, ...rows.map(r => r.value));
  rows.forEach((r, i) => {
    const y = 4 + i * rowH, width = ((w - left - 110) * r.value) / max;
    const room = Math.floor(left / 7);
    el("text", { x: 0, y: y + 15, class: "y-label" }, svg, r.label.length > room ? r.label.slice(0, room - 1) + "…" : r.label);
    const bar = el("rect", { x: left, y, width: Math.max(1, width), height: rowH - 6, fill: r.color, class: "bar" }, svg);
    el("title", {}, bar, `${r.label}: ${inUnit(r.value, unit)}`);
    el("text", { x: left + width + 6, y: y + 15 }, svg, inUnit(r.value, unit));
  });
}

// One horizontal stacked bar per app: edge, cloud, refused.
function split(svg, rows) {
  clear(svg);
  const apps = [...new Set(rows.map(r => r.app))];
  const [w] = size(svg), left = 110, barH = 22;
  apps.forEach((app, i) => {
    const mine = rows.filter(r => r.app === app), total = mine.reduce((a, r) => a + r.requests, 0);
    let x = left;
    el("text", { x: 0, y: 20 + i * (barH + 10) }, svg, app);
    for (const route of ["edge", "cloud", "none"]) {
      const n = mine.filter(r => r.route === route).reduce((a, r) => a + r.requests, 0);
      if (!n) continue;
      const width = (n / total) * (w - left - 10);
      const bar = el("rect", { x, y: 6 + i * (barH + 10), width, height: barH, fill: COLORS[route], class: "bar" }, svg);
      el("title", {}, bar, `${app} ${route}: ${n} (${Math.round(100 * n / total)}%)`);
      const said = `${route === "none" ? REFUSED : route} ${Math.round(100 * n / total)}%`;
      if (width > said.length * 7 + 8) el("text", { x: x + 4, y: 21 + i * (barH + 10), class: "on-bar" }, svg, said);
      x += width;
    }
  });
}

function fmt(v) { return v === 0 ? "0" : v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : plain(v, 2); }

// A small number written out, never in exponent form: 0.0000153, not 1.53e-05.
function plain(v, significant) {
  const digits = Math.min(12, Math.max(0, significant - 1 - Math.floor(Math.log10(Math.abs(v)))));
  return v.toFixed(digits);
}

// Money for its size: $12.40, $0.0879, $0.000013; nothing spent is $0.
function money(v) {
  if (!v) return "$0";
  const sign = v < 0 ? "-" : "";
  return `${sign}$${Math.abs(v) >= 1 ? Math.abs(v).toFixed(2) : plain(Math.abs(v), 3)}`;
}

function inUnit(v, unit) {
  if (unit === "$") return money(v);
  if (unit === "share") return `${Math.round(100 * v)}%`;
  if (unit === "requests") return `${Math.round(v)} ${Math.round(v) === 1 ? "request" : "requests"}`;
  return unit ? `${fmt(v)} ${unit}` : fmt(v);
}

function table(id, rows) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren(...rows.map(cells => {
    const tr = document.createElement("tr");
    for (const [text, cls] of cells) { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; tr.appendChild(td); }
    return tr;
  }));
}

async function refresh() {
  try {
    const [byDay, byRoute, byRule, byModel, q] = await Promise.all(
      [usage("day"), usage("route"), usage("rule"), usage("model"), qualityReport()]);
    // a panel only where there is something to show: comparisons, batches, budgets, provider caches
    document.getElementById("quality").hidden = !q.comparisons;
    if (q.comparisons) drawQuality(q);
    const t = byDay.totals;
    document.getElementById("k-cost").textContent = money(t.cost_usd);
    // (null where no request had a cloud model to compare with: an edge-only app saves nothing)
    document.getElementById("k-counter").textContent = t.counterfactual_usd === null ? "–" : money(t.counterfactual_usd);
    document.getElementById("k-savings").textContent = t.savings_pct === null ? "–" : `${t.savings_pct}% (${money(t.savings_usd)})`;
    document.getElementById("k-requests").textContent = `${t.requests} (${t.edge_requests} / ${t.cloud_requests})`;
    const hitRate = t.requests ? Math.round((100 * t.cache_hits) / t.requests) : 0;
    document.getElementById("k-cache").textContent = `${t.cache_hits} (${hitRate}%, ${money(t.cache_saved_usd)})`;
    const cloudPrompt = byRoute.groups.filter(g => g.key === "cloud").reduce((n, g) => n + g.prompt_tokens, 0);
    const readShare = cloudPrompt ? Math.round((100 * t.cache_read_tokens) / cloudPrompt) : 0;
    document.getElementById("k-prompt-cache").textContent = `${readShare}% (${money(t.prompt_cache_saved_usd)})`;
    document.getElementById("k-prompt-cache").parentElement.hidden = !cloudPrompt;
    const b = byDay.batch;
    document.getElementById("k-batch").textContent = `${b.requests} (${b.edge_hours.toFixed(2)} h)`;
    document.getElementById("k-batch").parentElement.hidden = !b.requests;
    document.getElementById("k-errors").textContent = `${t.errors} (${t.requests ? Math.round(100 * t.errors / t.requests) : 0}%)`;
    bars(document.getElementById("c-spend"), byDay.groups.map(g => g.key), [
      { name: "spent", color: COLORS.cost, values: byDay.groups.map(g => g.cost_usd) },
      { name: "all-cloud would have cost", color: COLORS.counter, values: byDay.groups.map(g => g.counterfactual_usd) }], "$");
    split(document.getElementById("c-split"), byDay.split);
    const routes = byRoute.groups.filter(g => g.latency_p50_ms !== null);
    bars(document.getElementById("c-latency"), routes.map(g => g.key === "none" ? REFUSED : g.key), [
      { name: "p50", color: COLORS.edge, values: routes.map(g => g.latency_p50_ms) },
      { name: "p95", color: COLORS.cloud, values: routes.map(g => g.latency_p95_ms) }], "ms");
    const rules = [...byRule.groups].sort((a, b) => b.requests - a.requests).slice(0, 10);
    hbars(document.getElementById("c-rules"), rules.map(g => ({
      label: g.key || `${REFUSED} before a rule`, value: g.requests, color: g.key ? COLORS.cloud : COLORS.none })), "requests");
    const routeOf = Object.fromEntries(byDay.recent.map(r => [r.model, r.route]));
    table("t-models", [...byModel.groups].sort((a, b) => b.requests - a.requests).map(g => [
      [g.key || `${REFUSED} (no model)`], [routeOf[g.key] ?? "", `route-${routeOf[g.key] ?? ""}`], [g.requests], [money(g.cost_usd)],
      [g.counterfactual_usd === null ? "–" : money(g.counterfactual_usd)], [g.savings_usd === null ? "–" : money(g.savings_usd)], [`${g.cache_read_tokens} / ${g.cache_write_tokens}`],
      [money(g.prompt_cache_saved_usd)], [g.latency_p50_ms ?? "–"]]));
    table("t-budgets", byDay.budgets.map(b => [[b.app], [b.daily_usd ?? "–"], [b.monthly_usd ?? "–"], [money(b.left_usd)], [b.on_exhausted]]));
    document.getElementById("budgets").hidden = !byDay.budgets.length;
    table("t-recent", byDay.recent.slice(0, 20).map(r => [
      [new Date(r.ts * 1000).toLocaleTimeString()], [r.app], [r.kind], [r.route, `route-${r.route}`], [r.model], [r.rule],
      [r.error ? `${r.status} ${r.error}` : r.status, r.status >= 400 ? "err" : ""], [r.prompt_tokens + r.completion_tokens],
      [r.latency_ms.toFixed(0)], [money(r.cost_usd)], [r.prompt ?? "", "prompt"]]));
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()} · refreshes every 10 s`;
    document.body.dataset.ready = "true";
  } catch (error) {
    document.getElementById("updated").textContent = `could not load usage: ${error.message}`;
  }
}

refresh();
setInterval(refresh, 10000);
