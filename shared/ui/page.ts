/**
 * The web view at `/ui`: one self-contained page (no external script, style or font: it must
 * work offline and behind a strict network), read-only, polling `/ui/state` every second. It
 * draws the exclusive ranges as fill bars with their allocation rate, each host port range as a
 * heat map of use counts, every ENI pool, a live chart of allocations per second, and, when the
 * server sees a cluster (`berth sim`, `berth serve` with a kubeconfig), its nodes filled with
 * their allocated, reserved and ready game servers (node-view.ts counts them; cordoned, draining
 * and joining nodes carry marks), the fleet's totals, the last passes, berth's EC2 calls
 * against the account's budget, and the invariants. The Content-Security-Policy allows exactly
 * its own inline script and style, by hash.
 */
import { createHash } from 'node:crypto';
import type { HttpResponse } from '../http/exchange.js';

const STYLE = `
:root { color-scheme: light dark; font: 14px/1.4 system-ui, sans-serif; }
body { margin: 0 auto; max-width: 1280px; padding: 12px 16px; }
header { display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; }
h1 { font-size: 20px; margin: 0; }
h2 { font-size: 16px; margin: 18px 0 6px; }
#connection[data-state="down"] { color: #c62828; font-weight: 600; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 12px; }
.card { border: 1px solid #8884; border-radius: 6px; padding: 8px 10px; }
.range-name { font-weight: 600; }
meter { width: 100%; height: 18px; }
canvas.heat { width: 100%; height: 48px; image-rendering: pixelated; border: 1px solid #8884; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: right; padding: 2px 6px; border-bottom: 1px solid #8883; }
th:first-child, td:first-child { text-align: left; }
svg { width: 100%; height: 120px; border: 1px solid #8884; }
.nodes { display: grid; grid-template-columns: repeat(auto-fill, minmax(120px, 1fr)); gap: 6px; }
.node { border: 1px solid #8886; border-radius: 4px; padding: 4px 6px; font-size: 12px; }
.node[data-cordoned="true"] { border-style: dashed; opacity: 0.6; }
.node[data-draining="true"] { border-color: #c62828; }
.node[data-joining="true"] { border-style: dotted; opacity: 0.5; }
.node meter { height: 10px; }
.badges { list-style: none; margin: 2px 0; padding: 0; display: flex; flex-wrap: wrap; gap: 3px; }
.badges li { border: 1px solid #8888; border-radius: 3px; padding: 0 3px; font-size: 11px; }
.badges li[data-badge="draining"] { border-color: #c62828; color: #c62828; }
.badges li[data-badge="auto-mode"] { border-color: #b26a00; color: #b26a00; }
.games { line-height: 0; margin: 3px 0; }
/* Each state has its own shape as well as its own colour: filled square, half-filled square, */
/* hollow circle, so the view reads without colour. */
.gs { display: inline-block; box-sizing: border-box; width: 9px; height: 9px; margin: 1px; border: 2px solid; }
.gs[data-state="allocated"] { border-color: #1565c0; background: #1565c0; }
.gs[data-state="reserved"] { border-color: #ef6c00; background: linear-gradient(135deg, #ef6c00 50%, transparent 50%); }
.gs[data-state="ready"] { border-color: #2e7d32; border-radius: 50%; background: transparent; }
.legend .gs { vertical-align: middle; margin-right: 4px; }
#violations { color: #c62828; font-weight: 600; }
.legend span { margin-right: 12px; }
`;

const SCRIPT = `
'use strict';
const history = [];
let previous;
/** Wall-clock ms of the previous reading: rates are per second of wall-clock time. */
let previousWallMs;
const $ = (id) => document.getElementById(id);
const text = (tag, content, attrs = {}) => {
  const el = document.createElement(tag);
  el.textContent = content;
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
};

function renderRanges(state) {
  const box = $('ranges');
  box.replaceChildren();
  for (const range of state.ranges.filter((r) => r.kind !== 'hostPort')) {
    const card = text('div', '', { class: 'card', 'data-range': range.name });
    const label = range.kind === 'clusterIP' ? 'cluster IPs' : 'node ports';
    const change = previous ? changePer(range.name, state) : 0;
    card.append(
      text('div', range.name + ' (' + label + ')', { class: 'range-name' }),
      text('meter', '', {
        min: '0', max: String(range.size), value: String(range.used),
        'aria-label': label + ' ' + range.name + ': ' + range.used + ' of ' + range.size + ' used',
      }),
      // A range past 2^53 (an IPv6 /64) says how many blocks its values fill: a share reads 0.0%.
      text('div', (range.blocks === undefined
        ? range.used + ' of ' + range.size + ' used (' + (100 * range.used / range.size).toFixed(1) + '%)'
        : range.used + ' used in ' + range.blocks + ' blocks of 32') +
        ', net ' + (change >= 0 ? '+' : '') + change.toFixed(1) + ' a second',
        { class: 'range-used', 'data-used': String(range.used) }),
    );
    box.append(card);
  }
}

/** Net change of a range's use a second of wall-clock time: allocations less releases. */
function changePer(name, state) {
  const before = previous.ranges.find((r) => r.name === name);
  const now = state.ranges.find((r) => r.name === name);
  const seconds = (performance.now() - previousWallMs) / 1000;
  return before && now && seconds > 0 ? (now.used - before.used) / seconds : 0;
}

function renderHeat(state) {
  const box = $('hostports');
  box.replaceChildren();
  for (const heat of state.hostPorts) {
    const usage = state.ranges.find((r) => r.kind === 'hostPort' && r.name === heat.name);
    const card = text('div', '', { class: 'card', 'data-hostport-range': heat.name });
    const width = Math.min(heat.counts.length, 1024);
    const canvas = text('canvas', '', {
      class: 'heat', width: String(width), height: '1', role: 'img',
      'aria-label': 'use count per port of host port range ' + heat.name + ', ports ' +
        heat.first + ' to ' + (heat.first + heat.counts.length - 1),
    });
    const max = Math.max(1, ...heat.counts);
    const ctx = canvas.getContext('2d');
    if (ctx) {
      const image = ctx.createImageData(width, 1);
      for (let x = 0; x < width; x++) {
        const from = Math.floor(x * heat.counts.length / width);
        const to = Math.max(from + 1, Math.floor((x + 1) * heat.counts.length / width));
        let c = 0;
        for (let i = from; i < to; i++) c = Math.max(c, heat.counts[i]);
        const t = c / max;
        image.data.set([Math.round(255 * t), Math.round(80 + 100 * (1 - t)), Math.round(255 * (1 - t)), 255], x * 4);
      }
      ctx.putImageData(image, 0, 0);
    }
    card.append(
      text('div', heat.name + ' (host ports ' + heat.first + '-' + (heat.first + heat.counts.length - 1) + ')', { class: 'range-name' }),
      canvas,
      text('div', usage ? usage.used + ' held; use counts ' + usage.minUse + ' to ' + usage.maxUse : '',
        { class: 'range-used', 'data-used': String(usage ? usage.used : 0) }),
    );
    box.append(card);
  }
}

function renderPools(state) {
  const body = $('pool-rows');
  body.replaceChildren();
  $('pools-empty').hidden = state.pools.length > 0;
  for (const pool of state.pools) {
    const row = document.createElement('tr');
    for (const cell of [pool.node + (pool.draining ? ' (draining)' : ''), pool.instanceType,
      pool.enis, pool.capacity, pool.assigned, pool.idle, pool.ready, pool.cooling]) {
      row.append(text('td', String(cell)));
    }
    body.append(row);
  }
}

// Every cluster the server serves, as GET /v1/capacity answers it (absent in berth sim).
function renderCapacity(state) {
  const view = state.capacity;
  $('capacity-section').hidden = !view;
  if (!view) return;
  const body = $('capacity-rows');
  body.replaceChildren();
  const age = (s) => (s === undefined ? '' : ' (' + s + ' s)');
  const or = (v) => (v === undefined ? '-' : String(v));
  for (const c of view.clusters) {
    const row = document.createElement('tr');
    const g = c.gameServers;
    const fleets = g ? Object.entries(g.readyByFleet).map(([f, n]) => (f || 'no fleet') + ' ' + n).join(', ') : '';
    const ports = c.hostPorts ? c.hostPorts.ranges.map((r) => r.range + ' ' + or(r.free) + ', block ' + r.largestFreeBlock).join('; ') : '-';
    for (const cell of [
      c.cluster,
      g ? g.ready + (fleets ? ' (' + fleets + ')' : '') + age(g.ageSeconds) : '-',
      g ? or(g.freeSlots) : '-',
      c.buffer ? c.buffer.buffer + (c.buffer.nodesComing ? ', nodes coming' : '') : '-',
      ports,
      c.fronts ? c.fronts.free + ' of ' + c.fronts.total + age(c.fronts.ageSeconds) : '-',
      c.eni ? c.eni.freeAddresses + age(c.eni.ageSeconds) : '-',
      c.stale ? 'stale: ' + c.staleBecause.join('; ') : 'fresh',
    ]) {
      row.append(text('td', cell));
    }
    row.dataset.cluster = c.cluster;
    row.dataset.stale = String(c.stale);
    body.append(row);
  }
}

function renderChart(state) {
  if (previous) {
    // Values allocated (never net growth, which releases cancel), a second of wall-clock time.
    const seconds = (performance.now() - previousWallMs) / 1000;
    const allocated = (state.allocations ?? 0) - (previous.allocations ?? 0);
    history.push(seconds > 0 ? Math.max(0, allocated) / seconds : 0);
    if (history.length > 120) history.shift();
  }
  const peak = Math.max(0, ...history);
  const scale = Math.max(1, peak);
  const points = history.map((v, i) => (i * 1000 / 119).toFixed(1) + ',' + (100 - 95 * v / scale).toFixed(1)).join(' ');
  $('rate-line').setAttribute('points', points);
  const last = history.length ? history[history.length - 1] : 0;
  $('rate-now').textContent = last.toFixed(1) + ' allocations/s now, peak ' + peak.toFixed(1) +
    ' over the last ' + history.length + ' readings (a second of wall-clock time apart); ' +
    (state.allocations ?? 0) + ' values allocated by this server';
}

const GAME_STATES = ['allocated', 'reserved', 'ready'];
/** "3 allocated, 1 reserved, 8 ready". */
const statesText = (states) => GAME_STATES.map((s) => states[s] + ' ' + s).join(', ');

/** One marker a game server, grouped by state (allocated first), and the counts in words. */
function renderGames(node) {
  const row = text('div', '', { class: 'games', role: 'img',
    'aria-label': 'game servers on ' + node.name + ': ' + statesText(node.gameStates) });
  for (const s of GAME_STATES) {
    for (let i = 0; i < node.gameStates[s]; i++) row.append(text('span', '', { class: 'gs', 'data-state': s }));
  }
  const counts = text('div', node.gameServers + ' game servers: ' + statesText(node.gameStates),
    { class: 'node-pods' });
  for (const s of GAME_STATES) counts.dataset[s] = String(node.gameStates[s]);
  return [row, counts];
}

function renderCluster(state) {
  const view = state.clusterView;
  $('cluster-section').hidden = !view;
  $('invariants-section').hidden = !(view && view.invariants);
  if (!view) return;
  const box = $('nodes');
  box.replaceChildren();
  for (const node of view.nodes) {
    const card = text('div', '', { class: 'node', 'data-node': node.name,
      'data-cordoned': String(node.cordoned), 'data-draining': String(!!node.draining),
      'data-joining': String(!!node.joining) });
    const badges = text('ul', '', { class: 'badges', 'aria-label': 'marks of ' + node.name });
    badges.append(...node.badges.map((badge) => text('li', badge.text, { 'data-badge': badge.kind })));
    card.append(
      text('div', node.name, { class: 'node-name' }),
      badges,
      text('meter', '', {
        min: '0', max: String(node.cpuMillis), value: String(node.usedCpuMillis),
        'aria-label': 'node ' + node.name + ': ' + node.gameServers + ' game servers, ' +
          Math.round(100 * node.usedCpuMillis / node.cpuMillis) + '% of its CPU',
      }),
      ...renderGames(node),
    );
    box.append(card);
  }
  const joining = view.nodes.filter((node) => node.joining).length;
  $('nodes-coming').textContent = 'Nodes on their way: ' + (view.nodesOnTheirWay ?? 0) +
    ' asked for and not registered yet, ' + joining + ' registered and not Ready yet';
  const running = view.nodes.reduce((sum, node) => sum + node.gameServers, 0);
  $('cluster-summary').textContent = running + ' game servers on ' + view.nodes.length + ' nodes, ' +
    view.pendingGameServers + ' waiting for a node' +
    (view.waitingForIp !== undefined ? ', ' + view.waitingForIp + ' waiting for an address' : '') +
    (view.admissionMs
      ? '; admission p50 ' + view.admissionMs.p50 + ' ms, p99 ' + view.admissionMs.p99 + ' ms'
      : '');
  const fleet = $('fleet-states');
  fleet.textContent = 'Game servers on these nodes: ' + statesText(view.gameStates);
  for (const s of GAME_STATES) fleet.dataset[s] = String(view.gameStates[s]);
  $('passes-section').hidden = !(view.passes && view.passes.length > 0);
  $('passes').replaceChildren(...(view.passes || []).slice().reverse().map((pass) =>
    text('li', pass.kind + ' pass at ' + pass.atHours.toFixed(2) + ' h: ' + pass.summary)));
  renderEc2(view.ec2);
  if (view.invariants) {
    const list = $('violations');
    list.replaceChildren(...view.invariants.violations.map((v) => text('li', v)));
    $('invariants-summary').textContent = view.invariants.violations.length === 0
      ? view.invariants.checks + ' checks, every invariant held'
      : view.invariants.violations.length + ' violation(s) after ' + view.invariants.checks + ' checks: the run stopped';
  }
}

function renderEc2(ec2) {
  $('ec2-section').hidden = !ec2;
  if (!ec2) return;
  const minutes = ec2.mutatingPerMinute;
  const top = Math.max(ec2.mutatingBudgetPerMinute, ...minutes);
  const y = (v) => (100 - 95 * v / top).toFixed(1);
  const step = 1000 / Math.max(1, minutes.length - 1);
  $('ec2-line').setAttribute('points', minutes.map((v, i) => (i * step).toFixed(1) + ',' + y(v)).join(' '));
  $('ec2-budget').setAttribute('y1', y(ec2.mutatingBudgetPerMinute));
  $('ec2-budget').setAttribute('y2', y(ec2.mutatingBudgetPerMinute));
  const last = minutes.length ? minutes[minutes.length - 1] : 0;
  $('ec2-now').textContent = last + ' mutating EC2 calls in the last minute, peak ' +
    Math.max(0, ...minutes) + ', against a budget of ' + ec2.mutatingBudgetPerMinute +
    ' a minute; ' + ec2.calls + ' calls in all, ' + ec2.mutatingCalls + ' mutating, ' +
    ec2.throttled + ' throttled';
}

/** Who holds a value: the form's answer, one line a holding. */
async function lookUp(event) {
  event.preventDefault();
  const value = $('holder-query').value.trim();
  const out = $('holder-answer');
  if (!value) return;
  try {
    const response = await fetch('ui/holders?value=' + encodeURIComponent(value), { cache: 'no-store' });
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || 'HTTP ' + response.status);
    const list = document.createElement('ul');
    for (const h of answer.holders) {
      // A holder berth cannot name says why instead of a name (no cluster to read it from).
      const who = h.holder.name === '' ? '(' + (h.note || 'not named') + ')'
        : h.holder.namespace ? h.holder.namespace + '/' + h.holder.name : h.holder.name;
      list.append(text('li', h.kind + ' ' + h.value + ' (' + h.range + '): ' + h.holder.kind + ' ' +
        who + (h.state === 'releasing' ? ', releasing' : '')));
    }
    out.replaceChildren(answer.holders.length ? list : text('p', 'Nobody holds ' + answer.value + '.'));
  } catch (error) {
    out.replaceChildren(text('p', 'Lookup failed: ' + error.message));
  }
}
$('holder-form').addEventListener('submit', lookUp);

async function tick() {
  try {
    const response = await fetch('ui/state', { cache: 'no-store' });
    if (response.status === 503) {
      // berth answered: what failed is what it depends on (its store, the Kubernetes API), named.
      const answer = await response.json().catch(() => ({}));
      if (answer.error) throw Object.assign(new Error(answer.error), { dependency: true });
    }
    if (!response.ok) throw new Error('HTTP ' + response.status);
    const state = await response.json();
    $('cluster').textContent = 'cluster ' + state.cluster;
    renderRanges(state);
    renderHeat(state);
    renderPools(state);
    renderCluster(state);
    renderCapacity(state);
    renderChart(state);
    previous = state;
    previousWallMs = performance.now();
    $('connection').dataset.state = 'up';
    // The server's clock is the simulated day's during berth sim: say which time is which.
    const simulated = Math.abs(state.at - Date.now()) > 60000;
    $('connection').textContent = 'updated ' + new Date().toLocaleTimeString() + ' (wall-clock)' +
      (simulated ? '; simulated day time ' + new Date(state.at).toISOString().slice(11, 19) + ' UTC' : '');
  } catch (error) {
    $('connection').dataset.state = 'down';
    $('connection').textContent = error.dependency
      ? 'berth is up, but ' + error.message.split('; ')[0] + '; retrying'
      : 'berth is not answering (' + error.message + '); retrying';
  }
}
tick();
setInterval(tick, 1000);
`;

const hash = (source: string) => `'sha256-${createHash('sha256').update(source).digest('base64')}'`;

/** The page's HTML. */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>berth</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>berth</h1>
  <span id="cluster"></span>
  <span id="connection" role="status" aria-live="polite">connecting…</span>
</header>
<main>
  <section id="invariants-section" aria-labelledby="invariants-title" hidden>
    <h2 id="invariants-title">Invariants</h2>
    <p id="invariants-summary" aria-live="polite"></p>
    <ul id="violations" role="alert"></ul>
  </section>
  <section id="cluster-section" aria-labelledby="cluster-title" hidden>
    <h2 id="cluster-title">Nodes and their game servers</h2>
    <div id="cluster-summary"></div>
    <div id="nodes-coming"></div>
    <div id="fleet-states"></div>
    <p class="legend" id="game-legend">
      <span><span class="gs" data-state="allocated"></span>allocated: holds players, never moved</span>
      <span><span class="gs" data-state="reserved"></span>reserved: a match is coming, never moved</span>
      <span><span class="gs" data-state="ready"></span>ready: no players, moved off nodes berth drains</span>
      <span>borders: dashed cordoned, red draining, dotted joining (each also named on its node)</span>
    </p>
    <div id="nodes" class="nodes"></div>
  </section>
  <section id="passes-section" aria-labelledby="passes-title" hidden>
    <h2 id="passes-title">Last passes</h2>
    <ul id="passes" aria-labelledby="passes-title"></ul>
  </section>
  <section aria-labelledby="holder-title">
    <h2 id="holder-title">Who holds it?</h2>
    <form id="holder-form" role="search" aria-labelledby="holder-title">
      <label for="holder-query">A cluster IP, a node port or host port, or namespace/name</label>
      <input id="holder-query" name="value" autocomplete="off">
      <button type="submit">Look up</button>
    </form>
    <div id="holder-answer" aria-live="polite"></div>
  </section>
  <section aria-labelledby="ranges-title">
    <h2 id="ranges-title">Cluster IP and node port ranges</h2>
    <div id="ranges" class="grid"></div>
  </section>
  <section aria-labelledby="rate-title">
    <h2 id="rate-title">Allocations per second</h2>
    <svg viewBox="0 0 1000 100" preserveAspectRatio="none" role="img" aria-labelledby="rate-now">
      <polyline id="rate-line" fill="none" stroke="currentColor" stroke-width="2" points=""></polyline>
    </svg>
    <div id="rate-now"></div>
  </section>
  <section id="ec2-section" aria-labelledby="ec2-title" hidden>
    <h2 id="ec2-title">EC2 calls against the budget (mutating calls a minute; the dashed line is the budget)</h2>
    <svg viewBox="0 0 1000 100" preserveAspectRatio="none" role="img" aria-labelledby="ec2-now">
      <line id="ec2-budget" x1="0" x2="1000" y1="5" y2="5" stroke="#c62828" stroke-dasharray="8 6"></line>
      <polyline id="ec2-line" fill="none" stroke="currentColor" stroke-width="2" points=""></polyline>
    </svg>
    <div id="ec2-now"></div>
  </section>
  <section aria-labelledby="hostports-title">
    <h2 id="hostports-title">Host port ranges (use count per port: blue unused, red busiest)</h2>
    <div id="hostports" class="grid"></div>
  </section>
  <section id="capacity-section" aria-labelledby="capacity-title" hidden>
    <h2 id="capacity-title">Capacity across clusters (as the passes last recorded it)</h2>
    <table aria-labelledby="capacity-title">
      <thead><tr><th scope="col">cluster</th><th scope="col">ready game servers</th>
      <th scope="col">free slots</th><th scope="col">buffer</th><th scope="col">free host ports</th>
      <th scope="col">free fronts</th><th scope="col">free ENI addresses</th>
      <th scope="col">figures</th></tr></thead>
      <tbody id="capacity-rows"></tbody>
    </table>
  </section>
  <section aria-labelledby="pools-title">
    <h2 id="pools-title">ENI pools</h2>
    <p id="pools-empty">No ENI pool yet: pools appear when the ENI pass runs against a cluster.</p>
    <table aria-labelledby="pools-title">
      <thead><tr><th scope="col">node</th><th scope="col">type</th><th scope="col">ENIs</th>
      <th scope="col">capacity</th><th scope="col">assigned</th><th scope="col">idle</th>
      <th scope="col">ready</th><th scope="col">cooling</th></tr></thead>
      <tbody id="pool-rows"></tbody>
    </table>
  </section>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;

/**
 * `GET /ui`: the page, under headers that allow its own inline script and style and same-origin
 * requests only.
 */
export const WEB_VIEW_PAGE: HttpResponse = {
  statusCode: 200,
  body: PAGE,
  headers: {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': [
      "default-src 'none'",
      `script-src ${hash(SCRIPT)}`,
      `style-src ${hash(STYLE)}`,
      "connect-src 'self'",
      "img-src 'self' data:",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  },
};
