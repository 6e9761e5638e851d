// Crewlet's dashboard: a small single-page app over the node's REST read
// path (/api/v1/…) with the operator token. Every view reads at the level
// the chooser names (stale by default) and renders that level and the
// answer's lag beside its rows. It stays live by watching this node's log
// positions (the retention answer, every two seconds) and reading the
// view again when one moves. Data is only ever put in the page as text.
'use strict';

const state = {
  token: sessionStorage.getItem('crewlet.token') || '',
  level: sessionStorage.getItem('crewlet.level') || 'stale',
  // seen: the newest position each domain's answers have shown, the floor
  // a session read asks for (min_position).
  seen: {},
  positions: '',
  // shown: the address of the view on the page (render).
  shown: '',
  rendering: false,
  // again: a render was asked for while one was under way (render).
  again: false,
  // watching: the watch's ask is under way (watch).
  watching: false,
  // samples: each node and domain's applied seq at the last reading of
  // the retention answer, for the drain rate between two readings.
  samples: {},
};

// h builds an element; strings become text nodes, never markup.
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

class Refused extends Error {
  constructor(body, status) {
    super(body.message || body.refused || ('HTTP ' + status));
    this.code = body.refused || ('http_' + status);
    this.retryAfter = body.retry_after_seconds;
  }
}

// api reads a route. domain names the log the route reads ('tracker' or
// 'kb'), so a session read can name the position its domain last showed;
// routes without a read level (the retention answer) pass none.
async function api(path, params, domain) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null) u.searchParams.set(k, v);
  }
  if (domain) {
    u.searchParams.set('read_level', state.level);
    const seen = state.seen[domain];
    if (state.level === 'session' && seen) u.searchParams.set('min_position', seen);
  }
  const resp = await fetch(u, { headers: { Authorization: 'Bearer ' + state.token } });
  const body = await resp.json().catch(() => ({}));
  if (resp.status === 401) {
    logout('The node refused the token: ' + (body.message || 'log in again.'));
    throw new Refused(body, resp.status);
  }
  if (!resp.ok || body.refused) throw new Refused(body, resp.status);
  if (domain && body.seen_through && body.seen_through.stream) {
    const p = body.seen_through;
    const prev = state.seen[domain];
    if (!prev || Number(prev.split(':')[1]) < p.seq) {
      state.seen[domain] = p.stream + '@' + p.generation + ':' + p.seq;
    }
  }
  return body;
}

// readInfo renders what an answer promises: its level, how far this node
// had applied, and its lag behind the log.
function readInfo(a) {
  const parts = ['level: ' + a.level];
  if (a.seen_through && a.seen_through.stream) {
    const p = a.seen_through;
    parts.push('seen through ' + p.stream + '@' + p.generation + ':' + p.seq);
  }
  let lagging = false;
  if (a.lag) {
    lagging = a.lag.seq > 0;
    let lag = 'lag ' + a.lag.seq + ' records';
    if (a.lag.seconds !== undefined) lag += ' (' + a.lag.seconds.toFixed(1) + ' s)';
    parts.push(lag);
  } else {
    parts.push('lag unknown');
  }
  if (a.complete === false) parts.push('incomplete');
  const el = h('div', { class: 'readinfo' + (lagging ? ' lagging' : ''), 'data-level': a.level }, parts.join(' · '));
  if (a.note) el.append(h('div', { class: 'muted' }, a.note));
  return el;
}

function refusal(err) {
  const code = err.code ? err.code + ': ' : '';
  let msg = code + err.message;
  if (err.retryAfter) msg += ' (retry after ' + err.retryAfter + ' s)';
  return h('p', { class: 'refused', 'data-refused': err.code || '' }, msg);
}

function when(t) { return t ? new Date(t).toLocaleString() : ''; }

const views = {
  async board(project) {
    const projects = await api('/api/v1/projects', {}, 'tracker');
    const out = [h('h2', {}, 'Board'), readInfo(projects)];
    if (!projects.projects.length) return out.concat(h('p', { class: 'muted' }, 'No projects yet.'));
    project = project || projects.projects[0].key;
    out.push(h('p', { class: 'links' }, projects.projects.map((p) =>
      h('a', { href: '#/board/' + p.key, class: p.key === project ? 'active' : '' }, p.key + ' — ' + p.name))));
    const items = await api('/api/v1/work-items', { project, limit: 200 }, 'tracker');
    out.push(readInfo(items));
    const byStatus = {};
    for (const it of items.items) (byStatus[it.status] = byStatus[it.status] || []).push(it);
    const statuses = ['open', 'in_progress', 'blocked', 'done', 'cancelled'];
    out.push(h('div', { class: 'columns' }, statuses.map((s) => h('section', { class: 'column', 'data-status': s },
      h('h3', {}, s.replace('_', ' ') + ' (' + (byStatus[s] || []).length + ')'),
      (byStatus[s] || []).map((it) => h('a', { class: 'card', href: '#/item/' + it.key, 'data-key': it.key },
        h('div', { class: 'key' }, it.key + (it.assignee ? ' · ' + it.assignee : '')), it.title))))));
    if (items.next_cursor) out.push(h('p', { class: 'muted' }, 'Showing the first 200 items.'));
    return out;
  },

  async item(key) {
    const [read, hist] = await Promise.all([
      api('/api/v1/work-items/' + encodeURIComponent(key), {}, 'tracker'),
      api('/api/v1/work-items/' + encodeURIComponent(key) + '/history', {}, 'tracker'),
    ]);
    const it = read.item;
    const rows = [['status', it.status], ['assignee', it.assignee || '—'], ['version', it.version],
      ['parent', it.parent || '—'], ['tags', (it.tags || []).join(', ') || '—'],
      ['created', when(it.created_at)], ['updated', when(it.updated_at)]];
    return [
      h('h2', {}, it.key + ' ', h('span', { class: 'muted' }, it.title)), readInfo(read),
      h('table', {}, rows.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, String(v))))),
      h('pre', { class: 'body' }, it.description || '(no description)'),
      h('h3', {}, 'Dependencies'),
      (it.edges || []).length ? h('ul', {}, it.edges.map((e) => h('li', {}, e.kind + ' ', h('a', { href: '#/item/' + e.key }, e.key), e.mirror ? ' (mirror)' : '')))
        : h('p', { class: 'muted' }, 'None.'),
      h('h3', {}, 'Comments'),
      read.comments.length ? h('ul', {}, read.comments.map((c) => h('li', {}, h('strong', {}, c.author), ' ', h('span', { class: 'muted' }, when(c.at)), h('div', {}, c.body))))
        : h('p', { class: 'muted' }, 'None.'),
      h('h3', {}, 'History'), readInfo(hist),
      h('table', { class: 'history' }, h('tr', {}, ['seq', 'field', 'from', 'to', 'at'].map((t) => h('th', {}, t))),
        hist.changes.map((c) => h('tr', {}, h('td', {}, c.seq), h('td', {}, c.field), h('td', {}, c.old), h('td', {}, c.new), h('td', {}, when(c.at))))),
    ];
  },

  async kb(space) {
    const spaces = await api('/api/v1/spaces', {}, 'kb');
    const out = [h('h2', {}, 'Knowledge base'), readInfo(spaces)];
    if (!spaces.spaces.length) return out.concat(h('p', { class: 'muted' }, 'No spaces yet.'));
    space = space || spaces.spaces[0].key;
    out.push(h('p', { class: 'links' }, spaces.spaces.map((s) =>
      h('a', { href: '#/kb/' + s.key }, s.key + ' — ' + s.name + ' (' + s.pages + ')'))));
    const all = await api('/api/v1/pages', { space, limit: 200 }, 'kb');
    out.push(readInfo(all), h('ul', { class: 'tree', 'data-space': space }, pageTree(all.pages, '')));
    if (all.next_cursor) out.push(h('p', { class: 'muted' }, 'Showing the first 200 pages.'));
    return out;
  },

  async page(id) {
    const read = await api('/api/v1/pages/' + encodeURIComponent(id), {}, 'kb');
    const p = read.page;
    return [h('h2', {}, p.title), readInfo(read),
      h('p', { class: 'muted' }, 'space ', h('a', { href: '#/kb/' + p.space }, p.space), ' · version ' + p.version + ' · updated ' + when(p.updated_at)),
      h('pre', { class: 'body' }, p.body)];
  },

  async search(q) {
    const form = h('form', { onsubmit: (e) => { e.preventDefault(); location.hash = '#/search/' + encodeURIComponent(e.target.q.value); } },
      h('input', { name: 'q', value: q || '', placeholder: 'words to find', 'aria-label': 'search' }), h('button', { type: 'submit' }, 'Search'));
    const out = [h('h2', {}, 'Search'), form];
    if (!q) return out;
    const [items, pages] = await Promise.all([
      api('/api/v1/search/work-items', { q }, 'tracker'),
      api('/api/v1/search/pages', { q }, 'kb'),
    ]);
    out.push(h('h3', {}, 'Work items'), readInfo(items),
      h('ul', {}, items.hits.map((x) => h('li', {}, h('a', { href: '#/item/' + x.key }, x.key), ' ' + x.title + ' ', h('span', { class: 'muted' }, x.status)))));
    out.push(h('h3', {}, 'Pages'), readInfo(pages),
      h('ul', {}, pages.hits.map((x) => h('li', {}, h('a', { href: '#/page/' + x.id }, x.title), ' ', h('span', { class: 'muted' }, x.space)))));
    return out;
  },

  async retention() {
    const a = await api('/api/v1/retention');
    const out = [h('h2', {}, 'Settings › Backups & retention'),
      h('div', { class: 'readinfo' }, 'level: ' + a.level + ' · asked ' + a.node + ' at ' + when(a.asked_at)),
      a.note ? h('p', { class: 'muted' }, a.note) : null, h('h3', {}, 'Logs'),
      figures((a.logs || []).map((l) => Object.assign({ trim_floor: floorOf(l) }, l)), ['domain', 'stream', 'generation', 'first_seq', 'last_seq', 'trim_floor'])];
    out.push(h('h3', {}, 'Nodes'));
    const rows = [];
    for (const n of a.nodes || []) for (const d of n.domains || []) rows.push(Object.assign({ node: n.node }, d));
    for (const r of rows) {
      if (r.reader) r.reader = r.reader.leader ? r.reader.leader + (r.reader.since ? ' since ' + when(r.reader.since) : '') : 'electing';
      // A position in a generation the log has left has no lag, and a node
      // that found its log is not its rows' is marked (kept apart from
      // lag and node, which the drain below reads).
      r.standing = r.left_gen ? 'left gen ' + r.left_gen : (r.log_diverged ? 'log_diverged' : (r.wrong_log ? 'wrong log: ' + r.wrong_log : ''));
      if (r.apply) r.apply = 'longest tx ' + (r.apply.longest_tx / 1e6).toFixed(1) + ' ms (' + r.apply.longest_tx_records + ' records), batch ' + r.apply.longest_batch_records + ' records';
    }
    out.push(figures(rows, ['node', 'domain', 'generation', 'seq', 'applied_through', 'lag', 'standing', 'reader', 'apply']));
    out.push(h('h3', {}, 'Progress'), await backupProgress(), drainProgress(rows, a.asked_at));
    for (const [k, v] of Object.entries(a)) {
      if (Array.isArray(v) && !['logs', 'nodes'].includes(k)) out.push(h('h3', {}, k.replace(/_/g, ' ')), v.length ? figures(v) : h('p', { class: 'muted' }, 'None.'));
    }
    out.push(h('h3', {}, 'Snapshots'));
    try {
      const s = await api('/api/v1/snapshots');
      const rows = s.snapshots.map((m) => ({ taken_at: when(m.taken_at), donor: m.donor, size: m.size,
        checkpoints: Object.entries(m.domains || {}).map(([d, p]) => d + ' ' + p.stream + '@' + p.generation + ':' + p.seq).join(', '), sha256: m.sha256 }));
      out.push(rows.length ? figures(rows) : h('p', { class: 'muted' }, 'No snapshot yet: crewlet retention backup takes one, and the schedule does.'));
    } catch (err) {
      out.push(refusal(err));
    }
    return out;
  },

  async usage(days) {
    days = Number(days) || 14;
    const to = new Date();
    const from = new Date(to.getTime() - (days - 1) * 86400000);
    const ymd = (d) => d.toISOString().slice(0, 10);
    // The node cuts days on the company's clock; the range asked is the
    // browser's days, and the answer names the range it served.
    const u = await api('/api/v1/usage', { from: ymd(from), to: ymd(to) });
    const cov = u.coverage || { nodes: [], ratio: 1 };
    const out = [h('h2', {}, 'Usage'),
      h('p', { class: 'links' }, [7, 14, 30, 90, 181].map((n) => h('a', { href: '#/usage/' + n, class: n === days ? 'active' : '' }, n + ' days'))),
      readInfo(u),
      h('p', { class: 'muted', 'data-coverage': String(cov.ratio) }, u.from + ' to ' + u.to + ' (' + u.timezone + ') · coverage ' +
        Math.round(cov.ratio * 100) + ' % of node-days (' + cov.node_days + ' of ' + cov.expected + ')' +
        cov.nodes.filter((n) => n.missing.length).map((n) => ' · ' + n.node + ' missing ' + n.missing.join(', ')).join('')),
      h('p', {}, 'calls ' + u.totals.calls + ' · refusals ' + u.totals.refusals + ' · turns ' + u.totals.turns +
        (u.totals.spend || []).map((s) => ' · ' + s.model + ' $' + (s.cost_micros / 1e6).toFixed(2) + ' (' + s.input_tokens + ' in, ' + s.output_tokens + ' out)').join('')),
      usageChart(u)];
    out.push(h('h3', {}, 'Seats'), u.seats.length ? figures(u.seats.map((s) => ({ seat: s.seat, calls: s.calls, refusals: s.refusals, turns: s.turns,
      refusals_by_code: s.refusals_by_code.map((r) => r.code + ' ' + r.n).join(', '),
      spend: s.spend.map((x) => x.model + ' $' + (x.cost_micros / 1e6).toFixed(2)).join(', '),
      tools: s.tools.slice(0, 5).map((t) => t.tool + ' ' + t.calls).join(', ') }))) : h('p', { class: 'muted' }, 'No calls in this range.'));
    out.push(h('h3', {}, 'Tools'), u.tools.length ? figures(u.tools.map((t) => ({ tool: t.tool, calls: t.calls, refusals: t.refusals,
      outcomes: Object.entries(t.outcomes).map(([k, v]) => k + ' ' + v).join(', ') }))) : h('p', { class: 'muted' }, 'None.'));
    out.push(h('h3', {}, 'Call durations'), figures([Object.fromEntries(u.totals.durations.map((n, i) =>
      [i < u.totals.duration_buckets_ms.length ? '≤ ' + u.totals.duration_buckets_ms[i] + ' ms' : '> ' + u.totals.duration_buckets_ms.at(-1) + ' ms', n]))]));
    return out;
  },

  async audit() {
    const a = await api('/api/v1/audit', { limit: 200 });
    const rows = (a.entries || []).map((e) => ({
      at: when(e.at), by: e.by, what: e.what, kind: e.kind, domain: e.domain, writer: e.writer, op_id: e.op_id,
      position: e.position ? e.position.stream + '@' + e.position.generation + ':' + e.position.seq : '',
    }));
    const seen = (a.seen_through || []).map((p) => p.stream + '@' + p.generation + ':' + p.seq).join(', ');
    return [h('h2', {}, 'Settings › Audit trail'), h('div', { class: 'readinfo', 'data-level': a.level }, 'level: ' + a.level + ' · seen through ' + seen),
      rows.length ? figures(rows, ['at', 'by', 'what']) : h('p', { class: 'muted' }, 'No purge, eviction, readmission or capacity change yet.')];
  },
};

// usageChart draws the usage answer's days as an SVG: calls per day as
// bars stacked by seat (one colour a seat, named in the legend), the
// day's refusals as a red mark on each bar, and the day under it.
function usageChart(u) {
  const ns = 'http://www.w3.org/2000/svg';
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = String(text);
    return e;
  };
  const seats = [...new Set(u.days.flatMap((d) => d.seats.map((s) => s.seat)))].sort();
  const palette = ['#3b6fd1', '#2a9d8f', '#e9a23b', '#8e5bd1', '#d1495b', '#5c946e', '#c06c84', '#457b9d', '#b5838d', '#6d6875'];
  const colour = (seat) => palette[seats.indexOf(seat) % palette.length];
  const W = 760, H = 220, left = 40, bottom = 36, top = 10;
  const max = Math.max(1, ...u.days.map((d) => d.calls));
  const bw = (W - left - 10) / Math.max(u.days.length, 1);
  const y = (n) => top + (H - top - bottom) * (1 - n / max);
  const svg = el('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img', class: 'usage-chart',
    'aria-label': 'calls and refusals per day, by seat' });
  svg.append(el('line', { x1: left, y1: y(0), x2: W - 10, y2: y(0), stroke: '#9aa3ad' }));
  svg.append(el('text', { x: left - 4, y: y(max) + 4, 'text-anchor': 'end', 'font-size': 10 }, max));
  svg.append(el('text', { x: left - 4, y: y(0), 'text-anchor': 'end', 'font-size': 10 }, 0));
  u.days.forEach((d, i) => {
    const x = left + i * bw + bw * 0.15;
    let acc = 0;
    for (const s of d.seats) {
      const r = el('rect', { x, y: y(acc + s.calls), width: bw * 0.7, height: y(acc) - y(acc + s.calls), fill: colour(s.seat), 'data-day': d.day, 'data-seat': s.seat });
      r.append(el('title', {}, d.day + ' · ' + s.seat + ': ' + s.calls + ' calls, ' + s.refusals + ' refused'));
      svg.append(r);
      acc += s.calls;
    }
    if (d.refusals > 0) {
      const m = el('rect', { x: x - 2, y: y(d.refusals) - 1.5, width: bw * 0.7 + 4, height: 3, fill: '#d1162b', 'data-refusals': d.refusals });
      m.append(el('title', {}, d.day + ': ' + d.refusals + ' refused'));
      svg.append(m);
    }
    if (u.days.length <= 31 || i % Math.ceil(u.days.length / 15) === 0) {
      svg.append(el('text', { x: x + bw * 0.35, y: H - bottom + 14, 'text-anchor': 'middle', 'font-size': 9 }, d.day.slice(5)));
    }
  });
  const legend = h('p', { class: 'legend' }, seats.map((s) => h('span', { class: 'key' }, h('span', { class: 'swatch', style: 'background:' + colour(s) }), s)),
    h('span', { class: 'key' }, h('span', { class: 'swatch', style: 'background:#d1162b' }), 'refusals'));
  return h('figure', { class: 'usage' }, svg, legend);
}

// backupProgress renders this node's snapshot take under way (pages
// copied of the total, then the artefact being stored) or its last one.
async function backupProgress() {
  let p;
  try {
    p = await api('/api/v1/progress');
  } catch (err) {
    return refusal(err);
  }
  const b = p.backup;
  if (!b) return h('p', { class: 'backup muted', 'data-phase': 'none' }, 'No backup on ' + p.node + ' since it started.');
  const words = { copying: 'copying pages', storing: 'storing the artefact', done: 'done', failed: 'failed' }[b.phase] || b.phase;
  const parts = ['Backup on ' + p.node + ': ' + words, b.done_pages + ' of ' + b.total_pages + ' pages (' + b.percent + ' %)',
    'started ' + when(b.started_at)];
  if (b.ended_at) parts.push('ended ' + when(b.ended_at));
  if (b.name) parts.push(b.name);
  if (b.error) parts.push(b.error);
  return h('div', { class: 'backup', 'data-phase': b.phase, 'data-running': String(b.running) },
    h('progress', { max: String(Math.max(b.total_pages, 1)), value: String(b.done_pages) }), ' ', parts.join(' · '));
}

// drainProgress renders each node's replay or drain in each domain: its
// lag in records, the rate it applied at since the last reading (two
// seconds ago, while the page is open) and when, at that rate, it is
// caught up.
function drainProgress(rows, askedAt) {
  const now = askedAt ? Date.parse(askedAt) : Date.now();
  const out = rows.map((r) => {
    const key = r.node + '/' + r.domain;
    const prev = state.samples[key];
    state.samples[key] = { seq: r.seq, at: now, gen: r.generation };
    const lag = r.lag && r.lag.seq !== undefined ? r.lag.seq : null;
    let rate = null;
    if (prev && prev.gen === r.generation && now > prev.at && r.seq >= prev.seq) rate = (r.seq - prev.seq) / ((now - prev.at) / 1000);
    let status = 'unknown';
    if (lag === 0) status = 'caught up';
    // A node publishes its positions at its beat: a lag that did not move
    // between two readings is "not moving" yet, not a fault by itself.
    else if (lag > 0) status = rate > 0 ? 'draining' : (rate === null ? 'measuring' : 'not moving');
    return {
      node: r.node, domain: r.domain, lag_records: lag === null ? 'unknown' : lag,
      rate: rate === null ? 'measuring' : rate.toFixed(1) + ' records/s',
      caught_up_in: lag > 0 && rate > 0 ? (lag / rate).toFixed(0) + ' s' : (lag === 0 ? 'now' : ''),
      status,
    };
  });
  return h('div', { class: 'drain' }, out.length ? figures(out) : h('p', { class: 'muted' }, 'No node has published its positions yet.'));
}

// floorOf words a log's trim floor and the term that holds it.
function floorOf(l) {
  if (l.floor_unread) return 'unreadable: ' + l.floor_unread;
  if (!l.floor || !l.floor.term) return '0 (nothing trimmed yet)';
  return l.floor.through + ' (held by ' + l.floor.term + ': ' + l.floor.holder + ')';
}

// pageTree lists the pages under parent ('' for the space's top), each
// with its own children below it.
function pageTree(pages, parent) {
  return pages.filter((p) => (p.parent || '') === parent).map((p) => {
    const li = h('li', {}, h('a', { href: '#/page/' + p.id, 'data-page': p.id }, p.title));
    const kids = pageTree(pages, p.id);
    if (kids.length) li.append(h('ul', { class: 'tree' }, kids));
    return li;
  });
}

// figures renders rows of an answer as a table: first the named columns,
// then every other field the rows carry (so a figure the node adds shows
// up without a change here).
function figures(rows, first) {
  const cols = [...(first || [])];
  for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  const cell = (v) => {
    if (v === undefined || v === null) return '';
    if (typeof v === 'object' && 'seq' in v && !('stream' in v)) return v.seq + (v.seconds !== undefined ? ' (' + v.seconds.toFixed(1) + ' s)' : '');
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  };
  return h('table', {}, h('tr', {}, cols.map((c) => h('th', {}, c))),
    rows.map((r) => h('tr', {}, cols.map((c) => h('td', { 'data-col': c }, cell(r[c]))))));
}

function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  switch (parts[0]) {
    case 'item': return ['board', () => views.item(parts[1])];
    case 'kb': return ['kb', () => views.kb(parts[1])];
    case 'page': return ['kb', () => views.page(parts[1])];
    case 'search': return ['search', () => views.search(parts[1])];
    case 'usage': return ['usage', () => views.usage(parts[1])];
    case 'settings': return parts[1] === 'audit' ? ['audit', () => views.audit()] : ['settings', () => views.retention()];
    default: return ['board', () => views.board(parts[1])];
  }
}

// render shows the view the address names. One render runs at a time; a
// render asked for meanwhile (a navigation, the two-second watch) runs
// once the one under way ends, and a view whose address changed while it
// was read is not shown: dropping the later ask lost a search submitted
// while the watch was rendering, and showed the view left behind.
async function render() {
  if (!state.token) return;
  if (state.rendering) { state.again = true; return; }
  state.rendering = true;
  try {
    do {
      state.again = false;
      const hash = location.hash;
      const [nav, view] = route();
      for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.id === 'nav-' + nav);
      let kids;
      try {
        kids = await view();
      } catch (err) {
        kids = [refusal(err)];
      }
      if (!state.token) return;
      if (location.hash !== hash) { state.again = true; continue; }
      const main = document.getElementById('main');
      const typed = typedIn(main, state.shown === hash);
      main.replaceChildren(...kids.flat().filter(Boolean));
      state.shown = hash;
      typed.restore(main);
    } while (state.again);
  } finally {
    state.rendering = false;
  }
}

// typedIn keeps which field of the view has the caret and, where the
// same view is rendered again (sameView: the watch redraws it whenever a
// position moves), what its fields hold, so what was typed and not yet
// submitted stays: redrawn from its address alone, a search box was
// emptied under the hands of whoever was typing in it.
function typedIn(main, sameView) {
  const values = {};
  if (sameView) for (const el of main.querySelectorAll('input[name]')) values[el.name] = el.value;
  const f = document.activeElement;
  const focused = f && main.contains(f) && f.name ? { name: f.name, start: f.selectionStart, end: f.selectionEnd } : null;
  return {
    restore(into) {
      for (const el of into.querySelectorAll('input[name]')) if (el.name in values) el.value = values[el.name];
      if (!focused) return;
      const el = into.querySelector('[name="' + focused.name + '"]');
      if (!el) return;
      el.focus();
      if (focused.start !== null && el.setSelectionRange) el.setSelectionRange(focused.start, focused.end);
    },
  };
}

// watch reads this node's positions every two seconds and renders the
// view again when one has moved. One ask at a time: a node cut off from
// its broker takes longer than two seconds to answer, and asks piling up
// held the connections the browser opens to the node, so the view's own
// reads (the note saying no lag is measured) waited behind them, twice
// as long.
async function watch() {
  if (!state.token || state.watching) return;
  state.watching = true;
  try {
    const a = await api('/api/v1/retention');
    // The logs' ends move the moment a write lands; this node's own
    // positions move when it has applied it (at its next beat).
    const mine = (a.nodes || []).find((n) => n.node === a.node);
    const ends = (a.logs || []).map((l) => l.stream + ':' + l.generation + ':' + l.last_seq);
    const applied = mine ? mine.domains.map((d) => d.domain + ':' + d.generation + ':' + d.seq) : [];
    const sig = ends.concat(applied).join(',');
    if (sig !== state.positions) {
      state.positions = sig;
      await render();
    } else if (['settings', 'audit', 'usage'].includes(route()[0])) {
      await render();
    }
  } catch (err) { /* the next tick asks again; a 401 has logged out */ } finally {
    state.watching = false;
  }
}

function showApp() {
  document.getElementById('top').hidden = false;
  document.getElementById('level').value = state.level;
  render();
}

function logout(why) {
  state.token = '';
  sessionStorage.removeItem('crewlet.token');
  if (why) sessionStorage.setItem('crewlet.why', why);
  location.reload();
}

document.addEventListener('DOMContentLoaded', () => {
  const why = sessionStorage.getItem('crewlet.why');
  if (why) { document.getElementById('login-error').textContent = why; sessionStorage.removeItem('crewlet.why'); }
  document.getElementById('login').addEventListener('submit', async (e) => {
    e.preventDefault();
    const tok = document.getElementById('token').value.trim();
    const resp = await fetch('/api/v1/projects', { headers: { Authorization: 'Bearer ' + tok } });
    if (resp.status === 401 || resp.status === 403) {
      const body = await resp.json().catch(() => ({}));
      document.getElementById('login-error').textContent = body.message || 'The node refused the token.';
      return;
    }
    state.token = tok;
    sessionStorage.setItem('crewlet.token', tok);
    showApp();
  });
  document.getElementById('level').addEventListener('change', (e) => {
    state.level = e.target.value;
    sessionStorage.setItem('crewlet.level', state.level);
    render();
  });
  document.getElementById('logout').addEventListener('click', () => logout(''));
  window.addEventListener('hashchange', render);
  if (state.token) showApp();
  setInterval(watch, 2000);
});
