// The edgeway dashboard: reads /api/usage with the admin key from the page's URL and draws SVG.
"use strict";
const KEY = new URLSearchParams(location.search).get("key") || "";
const NS = "http://www.w3.org/2000/svg";
const COLORS = { edge: "#3fb950", cloud: "#58a6ff", none: "#8b98a5", cost: "#58a6ff", counter: "#d29922" };

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
    { name: "edge as good", color: COLORS.edge, values: buckets.map(b => b.value ?? 0) }]);
}

function clear(svg) { while (svg.firstChild) svg.removeChild(svg.firstChild); return svg; }

function size(svg) { const box = svg.getBoundingClientRect(); return [box.width || 600, box.height || 220]; }

// Grouped vertical bars: labels on x, one bar per series.
function bars(svg, labels, series) {
  clear(svg);
  const [w, h] = size(svg), pad = 36, base = h - 28;
  const top = Math.max(0, ...series.flatMap(s => s.values));
  const max = top || 1;  // an empty chart: its bars are all zero, and its axis says 0
  const slot = (w - pad) / Math.max(1, labels.length), bw = Math.min(40, slot / (series.length + 1));
  el("line", { x1: pad, y1: base, x2: w, y2: base, stroke: "#263040" }, svg);
  el("text", { x: 2, y: 12, class: "axis-top" }, svg, fmt(top));
  labels.forEach((label, i) => {
    series.forEach((s, j) => {
      const v = s.values[i] || 0, bh = (v / max) * (base - 14);
      const bar = el("rect", { x: pad + i * slot + j * bw + 4, y: base - bh, width: bw - 2, height: bh, fill: s.color,
                               class: "bar" }, svg);
      el("title", {}, bar, `${s.name} ${label}: ${fmt(v)}`);
    });
    el("text", { x: pad + i * slot + 4, y: h - 10 }, svg, label.length > 14 ? label.slice(0, 13) + "…" : label);
  });
  series.forEach((s, j) => {
    el("rect", { x: w - 150, y: 6 + j * 16, width: 10, height: 10, fill: s.color }, svg);
    el("text", { x: w - 135, y: 15 + j * 16 }, svg, s.name);
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
      if (width > 40) el("text", { x: x + 4, y: 21 + i * (barH + 10), fill: "#0f1419" }, svg, `${route} ${Math.round(100 * n / total)}%`);
      x += width;
    }
  });
}

function fmt(v) { return v === 0 ? "0" : v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : v.toPrecision(2); }
function money(v) { return "$" + (v >= 1 ? v.toFixed(2) : v.toFixed(4)); }

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
    drawQuality(q);
    const t = byDay.totals;
    document.getElementById("k-cost").textContent = money(t.cost_usd);
    document.getElementById("k-counter").textContent = money(t.counterfactual_usd);
    document.getElementById("k-savings").textContent = t.savings_pct === null ? "–" : `${t.savings_pct}% (${money(t.savings_usd)})`;
    document.getElementById("k-requests").textContent = `${t.requests} (${t.edge_requests} / ${t.cloud_requests})`;
    const hitRate = t.requests ? Math.round((100 * t.cache_hits) / t.requests) : 0;
    document.getElementById("k-cache").textContent = `${t.cache_hits} (${hitRate}%, ${money(t.cache_saved_usd)})`;
    const cloudPrompt = byRoute.groups.filter(g => g.key === "cloud").reduce((n, g) => n + g.prompt_tokens, 0);
    const readShare = cloudPrompt ? Math.round((100 * t.cache_read_tokens) / cloudPrompt) : 0;
    document.getElementById("k-prompt-cache").textContent = `${readShare}% (${money(t.prompt_cache_saved_usd)})`;
    const b = byDay.batch;
    document.getElementById("k-batch").textContent = `${b.requests} (${b.edge_hours.toFixed(2)} h)`;
    bars(document.getElementById("c-spend"), byDay.groups.map(g => g.key), [
      { name: "spent $", color: COLORS.cost, values: byDay.groups.map(g => g.cost_usd) },
      { name: "all-cloud $", color: COLORS.counter, values: byDay.groups.map(g => g.counterfactual_usd) }]);
    split(document.getElementById("c-split"), byDay.split);
    const routes = byRoute.groups.filter(g => g.latency_p50_ms !== null);
    bars(document.getElementById("c-latency"), routes.map(g => g.key), [
      { name: "p50", color: COLORS.edge, values: routes.map(g => g.latency_p50_ms) },
      { name: "p95", color: COLORS.cloud, values: routes.map(g => g.latency_p95_ms) }]);
    const rules = [...byRule.groups].sort((a, b) => b.requests - a.requests).slice(0, 8);
    bars(document.getElementById("c-rules"), rules.map(g => g.key || "(none)"), [
      { name: "requests", color: COLORS.cloud, values: rules.map(g => g.requests) }]);
    const routeOf = Object.fromEntries(byDay.recent.map(r => [r.model, r.route]));
    table("t-models", [...byModel.groups].sort((a, b) => b.requests - a.requests).map(g => [
      [g.key || "(none)"], [routeOf[g.key] ?? "", `route-${routeOf[g.key] ?? ""}`], [g.requests], [money(g.cost_usd)],
      [money(g.counterfactual_usd)], [money(g.savings_usd)], [`${g.cache_read_tokens} / ${g.cache_write_tokens}`],
      [money(g.prompt_cache_saved_usd)], [g.latency_p50_ms ?? "–"]]));
    table("t-budgets", byDay.budgets.map(b => [[b.app], [b.daily_usd ?? "–"], [b.monthly_usd ?? "–"], [money(b.left_usd)], [b.on_exhausted]]));
    table("t-recent", byDay.recent.slice(0, 20).map(r => [
      [new Date(r.ts * 1000).toLocaleTimeString()], [r.app], [r.kind], [r.route, `route-${r.route}`], [r.model], [r.rule],
      [r.status, r.status >= 400 ? "err" : ""], [r.prompt_tokens + r.completion_tokens], [r.latency_ms.toFixed(0)],
      [r.cost_usd.toFixed(6)], [r.prompt ?? "", "prompt"]]));
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()} · refreshes every 10 s`;
    document.body.dataset.ready = "true";
  } catch (error) {
    document.getElementById("updated").textContent = `could not load usage: ${error.message}`;
  }
}

refresh();
setInterval(refresh, 10000);
