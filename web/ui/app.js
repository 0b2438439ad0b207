// app.js - the unhex browser UI: state in the URL, the explore, diff and
// build-ID views, and the hooks the browser tests read (window.__unhex).
//
// The whole view state lives in the URL fragment (#view=explore&type=...), so
// a copied link reproduces the view.  Changes we make ourselves use
// history.replaceState / pushState (no hashchange); a hashchange from the
// user (back button, pasted link) re-reads the state and reloads.

import * as api from './api.js';
import { decodeFlamebearer, topTable, sandwich, folded, unnamedShare } from './model.js';
import { FlameGraph } from './flame.js';
import { renderTopTable, renderDiffTable, renderSymbolsTable, adviceFor, brokenUnwinding, unwindingFor, renderReleasesTable, renderRegressionTable } from './tables.js';
import { fmtValue, fmtPct, fmtTime, el, DIFF_PALETTES } from './format.js';

const $ = (id) => document.getElementById(id);
const MAX_NODES = 16384;

const DEFAULTS = {
  view: 'explore', type: '', service: '', sel: '', from: 'now-1h', until: 'now',
  focus: '', search: '', orient: 'icicle', color: 'package', layout: 'both',
  sort: 'self', dir: 'desc', tfilter: '', fn: '',
  lsel: '', rsel: '', lfrom: '', luntil: '', rfrom: '', runtil: '', dmode: 'relative', cb: '0', dsearch: '',
  dfocus: '', rbase: '', rcand: '',
};
let state = { ...DEFAULTS };

const hooks = window.__unhex = {
  ready: false, loads: 0, diffReady: false, symbolsReady: false, releasesReady: false,
  firstRenderMs: null, renderMs: null, lastTooltip: null, focusedName: 'total',
  searchInfo: null, errors: [], state: () => ({ ...state }),
};

// ---- state <-> URL -----------------------------------------------------------

function readState() {
  const p = new URLSearchParams(location.hash.replace(/^#/, ''));
  state = { ...DEFAULTS };
  for (const k of Object.keys(DEFAULTS)) if (p.has(k)) state[k] = p.get(k);
}

function writeState(push) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (v !== DEFAULTS[k] || k === 'view') p.set(k, v);
  const url = '#' + p.toString();
  if (url === location.hash) return;
  if (push) history.pushState(null, '', url); else history.replaceState(null, '', url);
}

// "now", "now-1h", Unix seconds/ms → Unix seconds.
export function parseTime(s, now) {
  s = String(s || '').trim();
  if (s === 'now') return now;
  const m = /^now-(\d+)([smhdw])$/.exec(s);
  if (m) return now - Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2]];
  if (/^\d+$/.test(s)) { const n = Number(s); return n > 1e14 ? Math.floor(n / 1e6) : n > 1e11 ? Math.floor(n / 1000) : n; }
  return NaN;
}

function range(from = state.from, until = state.until) {
  const now = Math.floor(Date.now() / 1000);
  const f = parseTime(from, now), u = parseTime(until, now);
  if (!Number.isFinite(f) || !Number.isFinite(u) || f >= u) throw new Error(`bad time range "${from}" – "${until}" (use now-1h, now, or Unix seconds)`);
  return { from: f, until: u };
}

const esc = (v) => String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"');
const MATCHER_RE = /\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?/gy;

function parseMatchers(s) {
  const out = [];
  MATCHER_RE.lastIndex = 0;
  let m;
  while (MATCHER_RE.lastIndex < s.length && (m = MATCHER_RE.exec(s))) out.push({ name: m[1], op: m[2], value: m[3].replace(/\\(.)/g, '$1') });
  return out;
}
const matcherText = (f) => `${f.name}${f.op}"${esc(f.value)}"`;

function selector(service, sel) {
  const parts = [];
  if (service) parts.push(`service_name="${esc(service)}"`);
  if (sel) parts.push(sel);
  return '{' + parts.join(',') + '}';
}

// ---- small UI helpers ------------------------------------------------------

let busyCount = 0;
function busy(on) { busyCount += on ? 1 : -1; $('busy').hidden = busyCount <= 0; }

function showError(e) {
  const box = $('error');
  if (!e) { box.hidden = true; box.textContent = ''; return; }
  box.textContent = String(e.message || e);
  box.hidden = false;
  hooks.errors.push(box.textContent);
}

function fillSelect(sel, values, current, labelOf) {
  sel.replaceChildren(...values.map((v) => el('option', { value: v, selected: v === current }, labelOf ? labelOf(v) : v)));
}

function setSeg(id, value) {
  for (const b of $(id).querySelectorAll('button')) b.classList.toggle('on', b.dataset.v === value);
}

// ---- explore -----------------------------------------------------------------

let flame, swCallers, swCallees, diffFlame;
let model = null, lastResp = null, lastQuery = null, timeline = null;
let loadSeq = 0;

// Runs a page's load: numbered, so that an older one finishing late changes nothing,
// under the busy indicator, its error shown; hooks[ready] says when it is done.
async function runLoad(ready, load) {
  const seq = ++loadSeq;
  hooks[ready] = false;
  showError(null);
  busy(true);
  try {
    await load(seq);
  } catch (e) {
    if (seq === loadSeq) { showError(e); hooks[ready] = true; }
  } finally {
    busy(false);
  }
}

// Fills the profile type and service pickers from what the range holds, keeping the
// current choices while they are offered. False when stale() says a newer load took over.
async function pickTypeAndService(r, emptyMsg, stale = () => false) {
  const types = await api.profileTypes(r.from * 1000, r.until * 1000);
  if (stale()) return false;
  const ids = types.map((t) => t.ID);
  if (!ids.length) throw new Error(emptyMsg);
  if (!ids.includes(state.type)) state.type = ids.find((i) => /:cpu:/.test(i)) || ids[0];
  fillSelect($('ptype'), ids, state.type);
  const services = await api.labelValues('service_name', [], r.from * 1000, r.until * 1000);
  if (stale()) return false;
  if (!services.includes(state.service)) state.service = services[0] || '';
  fillSelect($('service'), services, state.service);
  return true;
}

function loadExplore() {
  return runLoad('ready', async (seq) => {
    const r = range();
    if (!await pickTypeAndService(r, 'no profiles in this time range: widen it or send profiles to /ingest',
      () => seq !== loadSeq)) return;
    writeState(false);
    renderFilterChips();
    const query = state.type + selector(state.service, state.sel);
    const [names, resp] = await Promise.all([
      api.labelNames([selector(state.service, '')], r.from * 1000, r.until * 1000),
      api.render(query, r.from, r.until, MAX_NODES),
    ]);
    if (seq !== loadSeq) return;
    fillSelect($('f-name'), ['', ...names.filter((n) => !n.startsWith('__') && n !== 'service_name')], '', (v) => v || '+ label…');
    lastResp = resp; lastQuery = { query, ...r };
    showModel(decodeFlamebearer(resp));
    await drawTimeline(resp, query, r);
    await updateBanner(resp, query, r, seq);
    if (seq !== loadSeq) return;
    hooks.loads++;
    hooks.ready = true;
  });
}

function showModel(m) {
  if (!m.n || !m.rootTotal) throw new Error('no samples for this selection in this time range: widen the range or remove filters');
  model = m;
  hooks.model = m;
  let focus = 0;
  if (state.focus) { focus = m.findPath(state.focus.split(';')); if (focus < 0) focus = 0; }
  flame.setOptions({ orientation: state.orient, colorBy: state.color });
  flame.search = state.search;
  flame.setModel(m, focus);
  if (hooks.firstRenderMs === null) hooks.firstRenderMs = flame.renderMs;
  hooks.renderMs = flame.renderMs;
  updateCrumbs($('crumbs'), flame, m);
  hooks.focusedName = m.names[m.name[flame.focus]];
  renderTable();
  updateLayout();
  updateExport();
}

function updateCrumbs(box, fg, m) {
  const chain = [];
  for (let a = fg.focus; a >= 0; a = m.parent[a]) chain.push(a);
  chain.reverse();
  box.replaceChildren(...chain.flatMap((a, k) => {
    const name = m.names[m.name[a]];
    const b = el('button', { class: k === chain.length - 1 ? 'crumb cur' : 'crumb', title: name, onclick: () => fg.setFocus(a) }, name.length > 40 ? name.slice(0, 39) + '…' : name);
    return k ? [el('span', { class: 'sep' }, '›'), b] : [b];
  }));
}

function renderTable() {
  if (!model) return;
  const rows = topTable(model);
  renderTopTable($('top-table'), rows, {
    total: model.rootTotal, units: model.units, sort: state.sort, dir: state.dir, filter: state.tfilter, selected: state.fn,
    onSort: (key) => {
      if (state.sort === key) state.dir = state.dir === 'desc' ? 'asc' : 'desc';
      else { state.sort = key; state.dir = key === 'name' ? 'asc' : 'desc'; }
      writeState(false); renderTable();
    },
    onPick: (name) => { state.fn = name; state.layout = 'sandwich'; writeState(true); updateLayout(); renderTable(); },
  });
}

function updateLayout() {
  setSeg('layout', state.layout);
  const panes = $('panes');
  panes.dataset.layout = state.layout;
  $('table-pane').hidden = state.layout === 'flame';
  $('graph-pane').hidden = state.layout === 'table';
  const sw = state.layout === 'sandwich';
  $('flame').hidden = sw;
  $('sandwich').hidden = !sw;
  if (!model) return;
  if (sw) {
    let fn = state.fn;
    if (!fn && flame.focus > 0) fn = model.names[model.name[flame.focus]];
    const id = fn ? model.names.indexOf(fn) : -1;
    $('sw-name').textContent = id >= 0 ? fn : 'pick a function in the table or focus one in the graph';
    if (id >= 0) {
      const s = sandwich(model, id);
      swCallers.setOptions({ orientation: 'flame', colorBy: state.color });
      swCallees.setOptions({ orientation: 'icicle', colorBy: state.color });
      swCallers.setModel(s.callers);
      swCallees.setModel(s.callees);
      hooks.sandwich = { name: fn, callers: s.callers.n, callees: s.callees.n };
    }
  } else {
    flame.render();
  }
}

function updateExport() {
  if (!lastQuery) return;
  const a = $('dl-pprof');
  a.href = api.pprofURL(lastQuery.query, lastQuery.from, lastQuery.until);
  a.download = `${state.service || 'profile'}.pb.gz`;
}

function downloadFolded(e) {
  e.preventDefault();
  if (!model) return;
  const text = folded(model, flame.focus);
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
  const a = el('a', { href: url, download: `${state.service || 'profile'}.folded.txt` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// ---- timeline with a brush -----------------------------------------------------

async function drawTimeline(resp, query, r) {
  let tl = resp.timeline;
  if (!tl || !Array.isArray(tl.samples)) {
    // The render answer had no timeline: ask SelectSeries for totals.
    const step = Math.max(10, Math.ceil((r.until - r.from) / 300));
    const series = await api.selectSeries(state.type, selector(state.service, state.sel), r.from * 1000, r.until * 1000, step);
    const n = Math.ceil((r.until - r.from) / step), samples = new Array(n).fill(0);
    for (const s of series) for (const p of s.points || []) {
      const k = Math.floor((Number(p.timestamp) / 1000 - r.from) / step);
      if (k >= 0 && k < n) samples[k] += Number(p.value) || 0;
    }
    tl = { startTime: r.from, samples, durationDelta: step };
  }
  timeline = { start: Number(tl.startTime) || r.from, step: Number(tl.durationDelta) || 10, samples: tl.samples.map(Number), from: r.from, until: r.until };
  paintTimeline();
}

function paintTimeline(sel) {
  const c = $('timeline');
  const dpr = window.devicePixelRatio || 1, w = c.clientWidth || 800, h = 64;
  c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
  const ctx = c.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  if (!timeline) return;
  const { from, until, start, step, samples } = timeline;
  const max = samples.reduce((a, v) => (v > a ? v : a), 1);
  const xOf = (t) => ((t - from) / (until - from)) * w;
  ctx.fillStyle = '#4b7bd1';
  samples.forEach((v, k) => {
    const x0 = xOf(start + k * step), x1 = xOf(start + (k + 1) * step);
    const bh = (v / max) * (h - 14);
    ctx.fillRect(x0, h - 12 - bh, Math.max(1, x1 - x0 - 0.5), bh);
  });
  ctx.fillStyle = '#666'; ctx.font = '10px sans-serif'; ctx.textBaseline = 'bottom';
  ctx.fillText(fmtTime(from), 2, h);
  const endLabel = fmtTime(until);
  ctx.fillText(endLabel, w - ctx.measureText(endLabel).width - 2, h);
  if (sel) {
    ctx.fillStyle = 'rgba(255,170,0,0.25)';
    ctx.fillRect(Math.min(sel[0], sel[1]), 0, Math.abs(sel[1] - sel[0]), h - 12);
  }
  $('timeline-label').textContent = `${fmtTime(from)} – ${fmtTime(until)} · drag to zoom in`;
}

function setupBrush() {
  const c = $('timeline');
  let x0 = null;
  c.addEventListener('mousedown', (e) => { x0 = e.offsetX; });
  c.addEventListener('mousemove', (e) => { if (x0 !== null) paintTimeline([x0, e.offsetX]); });
  window.addEventListener('mouseup', (e) => {
    if (x0 === null) return;
    const rect = c.getBoundingClientRect();
    const x1 = Math.max(0, Math.min(rect.width, e.clientX - rect.left));
    const a = Math.min(x0, x1), b = Math.max(x0, x1);
    x0 = null;
    if (b - a < 3 || !timeline) { paintTimeline(); return; }
    const { from, until } = timeline, span = until - from;
    state.from = String(Math.floor(from + (a / rect.width) * span));
    state.until = String(Math.ceil(from + (b / rect.width) * span));
    state.focus = '';
    writeState(true);
    syncInputs();
    loadExplore();
  });
}

// ---- symbolization banner ------------------------------------------------------

async function updateBanner(resp, query, r, seq) {
  const banner = $('banner');
  const local = unnamedShare(model);
  let status = resp.symbolization || null;
  if (!status && local.share > 0) {
    try { status = await api.symbolization(query, r.from, r.until); } catch (e) { status = { error: String(e.message || e) }; }
  }
  if (seq !== loadSeq) return;
  hooks.symbolization = status;
  const share = status && Number.isFinite(status.unsymbolizedShare) ? status.unsymbolizedShare : local.share;
  const bad = status && Array.isArray(status.buildIds) ? status.buildIds.filter((b) => b.status !== 'ok') : [];
  const broken = brokenUnwinding(status);
  if (share <= 0 && !bad.length && !broken.length) { banner.hidden = true; banner.replaceChildren(); return; }
  // A broken unwinder comes first: symbols cannot mend stacks cut short.
  const unwinding = broken.length ? el('div', { id: 'banner-unwinding' },
    el('div', null, el('strong', null, 'Stacks look broken: fix the unwinder first'),
      ' (the agent walking the stacks: frame pointers, .eh_frame, the runtime\'s own profiler), not the symbols.'),
    el('ul', null, broken.map((u) => el('li', { 'data-build-id': u.buildId || '', 'data-verdict': u.verdict }, unwindingFor(u))))) : null;
  let unnamed = null;
  if (share > 0 || bad.length) {
    const items = bad.map((b) => el('li', { 'data-build-id': b.buildId || '', 'data-status': b.status },
      adviceFor(b, true),
      Number.isFinite(b.samplesShare) ? el('span', { class: 'muted' }, ` (${fmtPct(b.samplesShare * 100)} of samples)`) : null));
    if (!bad.length) for (const p of local.perBinary) items.push(el('li', null, `${p.binary}: no names yet (${fmtPct(p.share * 100)} of samples)`));
    unnamed = el('div', { id: 'banner-symbols' },
      el('div', null, el('strong', null, `${fmtPct(share * 100)} of samples are in frames without names`),
        ' (shown as binary+0xoffset). ', el('a', { href: '#', onclick: (e) => { e.preventDefault(); go('symbols'); } }, 'All build IDs →')),
      el('ul', null, items));
  }
  banner.replaceChildren(...[unwinding, unnamed,
    status && status.error ? el('div', { class: 'muted' }, 'status unavailable: ' + status.error) : null].filter(Boolean));
  banner.hidden = false;
}

// ---- filters -------------------------------------------------------------------

function renderFilterChips() {
  const fs = parseMatchers(state.sel);
  $('filters').replaceChildren(...fs.map((f, k) => el('span', { class: 'chip' }, matcherText(f),
    el('button', { type: 'button', title: 'remove filter', onclick: () => {
      fs.splice(k, 1); state.sel = fs.map(matcherText).join(','); state.focus = '';
      writeState(true); loadExplore();
    } }, '×'))));
}

async function onFilterName() {
  const name = $('f-name').value;
  if (!name) { $('f-value').replaceChildren(); return; }
  try {
    const r = range();
    const vals = await api.labelValues(name, [selector(state.service, '')], r.from * 1000, r.until * 1000);
    fillSelect($('f-value'), vals, vals[0]);
  } catch (e) { showError(e); }
}

function addFilter() {
  const name = $('f-name').value, value = $('f-value').value;
  if (!name || value === undefined) return;
  const fs = parseMatchers(state.sel).filter((f) => f.name !== name);
  fs.push({ name, op: $('f-op').value, value });
  state.sel = fs.map(matcherText).join(',');
  state.focus = '';
  writeState(true);
  loadExplore();
}

function syncInputs() {
  $('from').value = state.from; $('until').value = state.until;
  $('search').value = state.search; $('orient').value = state.orient; $('colorby').value = state.color;
  $('table-filter').value = state.tfilter;
  $('diff-mode').value = state.dmode; $('diff-cb').checked = state.cb === '1'; $('diff-search').value = state.dsearch;
}

// ---- diff ------------------------------------------------------------------------

const sides = {};

function buildSide(key, box) {
  const s = {
    sel: el('input', { class: 'sel', size: 44, title: 'label selector, e.g. {service_name="api",version="1.5"}' }),
    from: el('input', { size: 12, title: 'from' }),
    until: el('input', { size: 12, title: 'until' }),
    lname: el('select', { title: 'label' }),
    lvalue: el('select', { title: 'value' }),
  };
  s.lname.addEventListener('change', async () => {
    try {
      const r = range(s.from.value, s.until.value);
      const base = '{service_name="' + esc(state.service) + '"}';
      fillSelect(s.lvalue, await api.labelValues(s.lname.value, [base], r.from * 1000, r.until * 1000), '');
    } catch (e) { showError(e); }
  });
  const setBtn = el('button', { type: 'button', onclick: () => {
    const fs = parseMatchers(s.sel.value.replace(/^\s*\{|\}\s*$/g, '')).filter((f) => f.name !== s.lname.value);
    if (s.lname.value) fs.push({ name: s.lname.value, op: '=', value: s.lvalue.value });
    s.sel.value = '{' + fs.map(matcherText).join(',') + '}';
  } }, 'Set');
  box.append(
    el('div', null, el('label', null, 'Selector ', s.sel)),
    el('div', null, el('label', null, 'Label ', s.lname), ' = ', s.lvalue, ' ', setBtn),
    el('div', null, el('label', null, 'From ', s.from), ' ', el('label', null, 'until ', s.until)));
  sides[key] = s;
}

function naturalSort(a) { return a.slice().sort((x, y) => x.localeCompare(y, 'en', { numeric: true })); }

function loadDiff(run) {
  return runLoad('diffReady', async (seq) => {
    const r = range();
    await pickTypeAndService(r, 'no profiles in this time range: widen it');
    const base = selector(state.service, '');
    const names = await api.labelNames([base], r.from * 1000, r.until * 1000);
    const labels = names.filter((n) => !n.startsWith('__') && n !== 'service_name');
    for (const k of ['l', 'r']) fillSelect(sides[k].lname, ['', ...labels], '', (v) => v || 'label…');
    if (!state.lsel || !state.rsel) {
      // Default: the two newest releases of the service, if it has a version label.
      const vlabel = labels.find((n) => /^(version|release|app_version|service_version)$/.test(n));
      let lv = base, rv = base;
      if (vlabel) {
        const vals = naturalSort(await api.labelValues(vlabel, [base], r.from * 1000, r.until * 1000));
        if (vals.length >= 2) {
          lv = selector(state.service, `${vlabel}="${esc(vals[vals.length - 2])}"`);
          rv = selector(state.service, `${vlabel}="${esc(vals[vals.length - 1])}"`);
          for (const k of ['l', 'r']) { sides[k].lname.value = vlabel; fillSelect(sides[k].lvalue, vals, k === 'l' ? vals[vals.length - 2] : vals[vals.length - 1]); }
        }
      }
      state.lsel = state.lsel || lv; state.rsel = state.rsel || rv;
    }
    sides.l.sel.value = state.lsel; sides.r.sel.value = state.rsel;
    sides.l.from.value = state.lfrom || state.from; sides.l.until.value = state.luntil || state.until;
    sides.r.from.value = state.rfrom || state.from; sides.r.until.value = state.runtil || state.until;
    writeState(false);
    if (!run && seq !== loadSeq) return;
    await runDiff(seq);
  });
}

async function runDiff(seq) {
  const lr = range(sides.l.from.value, sides.l.until.value), rr = range(sides.r.from.value, sides.r.until.value);
  const left = { query: state.type + sides.l.sel.value.trim(), ...lr };
  const right = { query: state.type + sides.r.sel.value.trim(), ...rr };
  const resp = await api.renderDiff(left, right, MAX_NODES);
  if (seq !== loadSeq) return;
  const m = decodeFlamebearer(resp);
  if (!m.n || !m.rootTotal) throw new Error('no samples on either side: check both selectors and time ranges');
  if (!m.diff) throw new Error('render-diff answered a single (not double) flame graph');
  hooks.diffModel = m;
  diffFlame.setOptions({ diffMode: state.dmode, palette: state.cb === '1' ? 'colorblind' : 'default', orientation: state.orient });
  diffFlame.search = state.dsearch;
  diffFlame.setModel(m, focusNode(m, state.dfocus));
  hooks.diffFocusName = diffFlame.focus ? m.names[m.name[diffFlame.focus]] : 'total';
  updateCrumbs($('diff-crumbs'), diffFlame, m);
  renderLegend();
  $('diff-totals').textContent = `Baseline: ${fmtValue(m.leftTicks, m.units)} over ${fmtDur(lr)} · Comparison: ${fmtValue(m.rightTicks, m.units)} over ${fmtDur(rr)}`;
  renderDiffTables(m);
  hooks.diffReady = true;
}

// The node of function `name` with the largest total (0, the root, when there is none).
function focusNode(m, name) {
  let best = 0;
  if (!name) return 0;
  for (let i = 1; i < m.n; i++) if (m.names[m.name[i]] === name && (!best || m.total[i] > m.total[best])) best = i;
  return best;
}

function fmtDur(r) {
  const s = r.until - r.from;
  return s >= 86400 ? (s / 86400).toFixed(1) + ' d' : s >= 3600 ? (s / 3600).toFixed(1) + ' h' : Math.round(s / 60) + ' min';
}

function renderDiffTables(m) {
  const rows = topTable(m);
  const opts = { mode: state.dmode, leftTicks: m.leftTicks, rightTicks: m.rightTicks, units: m.units,
    palette: state.cb === '1' ? 'colorblind' : 'default', onPick: (name) => { state.dsearch = name; $('diff-search').value = name; diffFlame.setSearch(name); writeState(false); } };
  renderDiffTable($('diff-regressions'), rows, { ...opts, which: 'regressions' });
  renderDiffTable($('diff-improvements'), rows, { ...opts, which: 'improvements' });
}

function renderLegend() {
  const p = DIFF_PALETTES[state.cb === '1' ? 'colorblind' : 'default'];
  const sw = (c, k = 1) => el('span', { class: 'swatch', style: `background:rgb(${c.map((v) => Math.round(v * k)).join(',')})` });
  const rel = state.dmode === 'relative';
  $('diff-legend').replaceChildren(
    el('span', null, sw(p.slower), ` ${p.slowerName} = slower: ${rel ? 'a larger share of the total' : 'a larger value'} in the comparison (+100 % or more is full ${p.slowerName})`),
    el('span', null, sw(p.same), ' grey = unchanged'),
    el('span', null, sw(p.faster), ` ${p.fasterName} = faster: ${rel ? 'a smaller share' : 'a smaller value'} in the comparison`),
    el('span', null, sw(p.slower, 0.75), ' [new] = only in the comparison'),
    el('span', null, sw(p.faster, 0.75), ' [removed] = only in the baseline'),
    el('span', { class: 'muted' }, 'Width = baseline + comparison.'));
}

// ---- releases page ------------------------------------------------------------------

let releaseList = [];

function loadReleases(run) {
  return runLoad('releasesReady', async (seq) => {
    const r = range(state.from === DEFAULTS.from ? 'now-24h' : state.from, state.until);
    await pickTypeAndService(r, 'no profiles in this time range: widen it');
    const list = await api.releases(state.service, state.type, r.from, r.until);
    if (seq !== loadSeq) return;
    releaseList = list.releases || [];
    hooks.releases = list;
    renderReleasesTable($('rel-list'), releaseList, fmtTime);
    const names = releaseList.map((x) => x.name);
    if (!names.includes(state.rbase)) state.rbase = names.length >= 2 ? names[names.length - 2] : names[0] || '';
    if (!names.includes(state.rcand)) state.rcand = names[names.length - 1] || '';
    fillSelect($('rel-base'), names, state.rbase);
    fillSelect($('rel-cand'), names, state.rcand);
    writeState(false);
    if (names.length < 2) {
      $('rel-summary').replaceChildren(el('p', { class: 'muted' }, `service ${state.service} has ${names.length} release${names.length === 1 ? '' : 's'} in this time range: nothing to compare`));
      $('rel-table').replaceChildren();
      hooks.releasesReady = true;
      return;
    }
    if (run) await runRegress(seq, r);
    else hooks.releasesReady = true;
  });
}

async function runRegress(seq, r) {
  const rep = await api.regressions(state.service, state.type, state.rbase, state.rcand, r.from, r.until, 30);
  if (seq !== loadSeq) return;
  hooks.regressions = rep;
  const n = rep.regressed;
  $('rel-summary').replaceChildren(el('p', null,
    el('span', { class: n ? 'fail' : 'pass' }, n ? `${n} regression${n === 1 ? '' : 's'}` : 'no regression'),
    ` between ${state.rbase} (${rep.baseline.profiles} profiles) and ${state.rcand} (${rep.candidate.profiles} profiles), `,
    `with ${fmtPct((1 - rep.params.alpha) * 100)} confidence (Welch, Holm-adjusted over ${rep.tests} tests); `,
    `min effect ${fmtPct(rep.params.minEffect * 100)}, noise floor ${fmtPct(rep.params.noiseFloor * 100)}; k = ${rep.k.toFixed(4)}.`));
  renderRegressionTable($('rel-table'), rep, { onPick: openRegressionDiff });
  hooks.releasesReady = true;
}

// A row of the report: the diff flame graph of the two releases, focused on its function.
function openRegressionDiff(row) {
  if (row.unnamed) return;
  const rel = (name) => releaseList.find((x) => x.name === name);
  const sel = (x) => (x && x.label !== 'build_id'
    ? `{service_name="${esc(state.service)}",${x.label}="${esc(x.name)}"}` : `{service_name="${esc(state.service)}"}`);
  const b = rel(state.rbase), c = rel(state.rcand);
  state.lsel = sel(b); state.rsel = sel(c);
  if (b) { state.lfrom = String(Math.floor(b.from / 1000)); state.luntil = String(Math.ceil(b.until / 1000) + 1); }
  if (c) { state.rfrom = String(Math.floor(c.from / 1000)); state.runtil = String(Math.ceil(c.until / 1000) + 1); }
  state.dfocus = row.function; state.dsearch = row.function;
  go('diff');
}

// ---- build IDs page ------------------------------------------------------------------

function loadSymbols() {
  return runLoad('symbolsReady', async (seq) => {
    const r = range();
    const query = state.type ? state.type + selector(state.service, state.sel) : '';
    const st = await api.symbolization(query, r.from, r.until);
    if (seq !== loadSeq) return;
    hooks.symbolization = st;
    const ids = Array.isArray(st.buildIds) ? st.buildIds : [];
    $('symbols-summary').replaceChildren(el('p', null,
      Number.isFinite(st.unsymbolizedShare) ? `${fmtPct(st.unsymbolizedShare * 100)} of samples are in frames without names. ` : '',
      `${ids.length} build ID${ids.length === 1 ? '' : 's'}, ${ids.filter((b) => b.status === 'ok').length} symbolized.`));
    renderSymbolsTable($('symbols-table'), ids);
    hooks.symbolsReady = true;
  });
}

// ---- routing --------------------------------------------------------------------

function go(view) {
  state.view = view;
  writeState(true);
  route();
}

function route() {
  for (const v of ['explore', 'diff', 'releases', 'symbols']) {
    $(v).hidden = state.view !== v;
    $('nav-' + v).classList.toggle('on', state.view === v);
  }
  syncInputs();
  if (state.view !== 'explore') $('banner').hidden = true;
  const noFilters = state.view === 'diff' || state.view === 'releases';
  document.querySelector('.add-filter').hidden = noFilters;
  $('filters').hidden = noFilters;
  if (state.view === 'diff') loadDiff(true);
  else if (state.view === 'releases') loadReleases(true);
  else if (state.view === 'symbols') loadSymbols();
  else loadExplore();
}

function init() {
  readState();
  flame = new FlameGraph($('flame'));
  swCallers = new FlameGraph($('sw-callers'), { orientation: 'flame' });
  swCallees = new FlameGraph($('sw-callees'));
  diffFlame = new FlameGraph($('diff-flame'));
  Object.assign(hooks, { flame, diffFlame, swCallers, swCallees });
  buildSide('l', $('side-left'));
  buildSide('r', $('side-right'));

  flame.onFocus = (i) => {
    state.focus = model.path(i).join(';');
    hooks.focusedName = model.names[model.name[i]];
    writeState(true);
    updateCrumbs($('crumbs'), flame, model);
  };
  flame.onSearch = (info) => {
    hooks.searchInfo = info;
    $('search-info').textContent = info ? `${info.count} matching frames, ${fmtPct((info.value / (info.total || 1)) * 100)} of total` : '';
  };
  diffFlame.onFocus = () => updateCrumbs($('diff-crumbs'), diffFlame, hooks.diffModel);
  diffFlame.onSearch = (info) => {
    $('diff-search-info').textContent = info ? `${info.count} matching frames, ${fmtPct((info.value / (info.total || 1)) * 100)} of total width` : '';
  };
  for (const fg of [swCallers, swCallees]) fg.onFocus = () => {};

  for (const v of ['explore', 'diff', 'releases', 'symbols']) $('nav-' + v).addEventListener('click', (e) => { e.preventDefault(); go(v); });
  $('rel-run').addEventListener('click', () => {
    state.rbase = $('rel-base').value; state.rcand = $('rel-cand').value;
    writeState(true);
    loadReleases(true);
  });
  document.querySelector('.brand').addEventListener('click', (e) => { e.preventDefault(); go('explore'); });
  window.addEventListener('hashchange', () => { readState(); route(); });

  $('ptype').addEventListener('change', () => { state.type = $('ptype').value; state.focus = ''; writeState(true); route(); });
  $('service').addEventListener('change', () => {
    state.service = $('service').value; state.sel = ''; state.focus = ''; state.fn = ''; state.lsel = ''; state.rsel = ''; state.rbase = ''; state.rcand = ''; state.dfocus = '';
    writeState(true); route();
  });
  $('f-name').addEventListener('change', onFilterName);
  $('f-add').addEventListener('click', addFilter);
  const presets = [['15m', 'now-15m'], ['1h', 'now-1h'], ['6h', 'now-6h'], ['24h', 'now-24h'], ['7d', 'now-7d']];
  $('presets').replaceChildren(...presets.map(([label, v]) => el('button', { type: 'button', 'data-v': v, onclick: () => {
    state.from = v; state.until = 'now'; state.focus = ''; writeState(true); route();
  } }, label)));
  const applyRange = () => { state.from = $('from').value.trim(); state.until = $('until').value.trim(); writeState(true); route(); };
  $('apply').addEventListener('click', applyRange);
  for (const id of ['from', 'until']) $(id).addEventListener('keydown', (e) => { if (e.key === 'Enter') applyRange(); });

  for (const b of $('layout').querySelectorAll('button')) b.addEventListener('click', () => {
    state.layout = b.dataset.v; writeState(true); updateLayout();
  });
  $('sw-close').addEventListener('click', () => { state.layout = 'both'; state.fn = ''; writeState(true); updateLayout(); renderTable(); });
  let searchTimer = null;
  $('search').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { state.search = $('search').value; writeState(false); flame.setSearch(state.search); }, 120);
  });
  $('table-filter').addEventListener('input', () => { state.tfilter = $('table-filter').value; writeState(false); renderTable(); });
  $('orient').addEventListener('change', () => { state.orient = $('orient').value; writeState(false); flame.setOptions({ orientation: state.orient }); diffFlame.setOptions({ orientation: state.orient }); });
  $('colorby').addEventListener('change', () => { state.color = $('colorby').value; writeState(false); flame.setOptions({ colorBy: state.color }); updateLayout(); });
  $('dl-folded').addEventListener('click', downloadFolded);
  setupBrush();

  $('diff-run').addEventListener('click', () => {
    state.lsel = sides.l.sel.value.trim(); state.rsel = sides.r.sel.value.trim();
    state.lfrom = sides.l.from.value.trim(); state.luntil = sides.l.until.value.trim();
    state.rfrom = sides.r.from.value.trim(); state.runtil = sides.r.until.value.trim();
    writeState(true);
    const seq = ++loadSeq;
    busy(true);
    showError(null);
    hooks.diffReady = false;
    runDiff(seq).catch((e) => { showError(e); hooks.diffReady = true; }).finally(() => busy(false));
  });
  const diffOpts = () => {
    state.dmode = $('diff-mode').value; state.cb = $('diff-cb').checked ? '1' : '0';
    writeState(false);
    diffFlame.setOptions({ diffMode: state.dmode, palette: state.cb === '1' ? 'colorblind' : 'default' });
    renderLegend();
    if (hooks.diffModel) renderDiffTables(hooks.diffModel);
  };
  $('diff-mode').addEventListener('change', diffOpts);
  $('diff-cb').addEventListener('change', diffOpts);
  $('diff-search').addEventListener('input', () => { state.dsearch = $('diff-search').value; writeState(false); diffFlame.setSearch(state.dsearch); });

  // Test and benchmark hook: render a flamebearer JSON object in the explore graph.
  hooks.loadFlamebearer = (json) => {
    const t0 = performance.now();
    const m = decodeFlamebearer(json);
    const t1 = performance.now();
    flame.setModel(m);
    model = m; hooks.model = m;
    return { decodeMs: t1 - t0, renderMs: flame.renderMs, nodes: m.n };
  };
  hooks.folded = () => (model ? folded(model, flame.focus) : '');

  route();
}

init();
