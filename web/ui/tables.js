// tables.js - the DOM tables: top functions, diff regressions/improvements,
// and build IDs with their symbolization status and advice.

import { el, fmtValue, fmtPct, diffPercent, diffColor, DIFF_PALETTES } from './format.js';

const MAX_ROWS = 300; // DOM rows shown at once; the filter narrows the rest

export function renderTopTable(box, rows, o) {
  const f = (o.filter || '').toLowerCase();
  let list = f ? rows.filter((r) => r.name.toLowerCase().includes(f)) : rows.slice();
  const key = o.sort || 'self', sign = o.dir === 'asc' ? 1 : -1;
  list.sort((a, b) => (key === 'name' ? sign * a.name.localeCompare(b.name) : sign * (a[key] - b[key]) || a.name.localeCompare(b.name)));
  const shown = list.slice(0, MAX_ROWS);
  const tot = o.total || 1;
  const th = (k, label) => el('th', { class: 'sortable' + (k === key ? ' sorted ' + (o.dir || 'desc') : ''), 'data-k': k, onclick: () => o.onSort(k) }, label);
  const table = el('table', { class: 'top' },
    el('thead', null, el('tr', null, th('name', 'Function'), th('self', 'Self'), th('total', 'Total'))),
    el('tbody', null, shown.map((r) => el('tr', { class: r.name === o.selected ? 'sel' : '', 'data-name': r.name, title: 'click: sandwich view (callers and callees)', onclick: () => o.onPick(r.name) },
      el('td', { class: 'fn' }, r.name),
      el('td', { class: 'num' }, fmtValue(r.self, o.units), el('span', { class: 'pct' }, fmtPct((r.self / tot) * 100))),
      el('td', { class: 'num' }, fmtValue(r.total, o.units), el('span', { class: 'pct' }, fmtPct((r.total / tot) * 100)))))));
  box.replaceChildren(table, list.length > MAX_ROWS ? el('div', { class: 'muted' }, `showing ${MAX_ROWS} of ${list.length} functions; filter to narrow`) : '');
}

// Regressions (which = 'regressions') or improvements by self change.
export function renderDiffTable(box, rows, o) {
  const rel = o.mode !== 'absolute';
  const share = (v, t) => (t ? (v / t) * 100 : 0);
  const items = rows.map((r) => {
    const l = rel ? share(r.ls, o.leftTicks) : r.ls, rr = rel ? share(r.rs, o.rightTicks) : r.rs;
    const status = r.lt === 0 && r.rt > 0 ? 'new' : r.rt === 0 && r.lt > 0 ? 'removed' : '';
    return { r, l, rr, delta: rr - l, pct: diffPercent(r.ls, r.rs, o.leftTicks, o.rightTicks, o.mode), status };
  }).filter((x) => (o.which === 'regressions' ? x.delta > 0 : x.delta < 0));
  items.sort((a, b) => (o.which === 'regressions' ? b.delta - a.delta : a.delta - b.delta));
  const top = items.slice(0, 25);
  const fmt = (v) => (rel ? fmtPct(v) : fmtValue(v, o.units));
  const p = DIFF_PALETTES[o.palette] || DIFF_PALETTES.default;
  const table = el('table', { class: 'top diff' },
    el('thead', null, el('tr', null, el('th', null, 'Function'), el('th', null, rel ? 'Baseline self %' : 'Baseline self'),
      el('th', null, rel ? 'Comparison self %' : 'Comparison self'), el('th', null, 'Change'))),
    el('tbody', null, top.map((x) => el('tr', { 'data-name': x.r.name, onclick: () => o.onPick(x.r.name), title: 'click: highlight in the graph' },
      el('td', { class: 'fn' }, x.status ? el('span', { class: 'tag ' + x.status }, x.status) : null, ' ', x.r.name),
      el('td', { class: 'num' }, fmt(x.l)), el('td', { class: 'num' }, fmt(x.rr)),
      el('td', { class: 'num', style: `color:${x.status === 'new' ? `rgb(${p.slower})` : x.status === 'removed' ? `rgb(${p.faster})` : diffColor(x.pct, o.palette)}` },
        x.status === 'new' ? 'new' : x.status === 'removed' ? 'removed' : (x.pct > 0 && Number.isFinite(x.pct) ? '+' : '') + fmtPct(x.pct))))));
  box.replaceChildren(top.length ? table : el('div', { class: 'muted' }, o.which === 'regressions' ? 'no function got slower' : 'no function got faster'));
}

const ADVICE = {
  ok: () => 'symbolized',
  no_build_id: () => 'has no GNU build ID, so its debug info cannot be matched: link it with -Wl,--build-id',
  not_found: () => ['not found: upload its debug info from CI with ', el('code', null, 'unhex upload'), ' (or make it reachable through a debuginfod upstream)'],
  mismatch: () => ['the uploaded file has another build ID: upload the debug file built together with this binary, with ', el('code', null, 'unhex upload')],
  invalid_elf: () => ['the uploaded debug info is not a valid ELF file: upload it again with ', el('code', null, 'unhex upload')],
  no_symbols: () => 'the binary and its debug info have no symbols: upload the unstripped binary or its .debug file',
  upstream_error: () => 'the debuginfod upstream failed (retried later): check the upstream URL and that it is reachable',
  pending: () => 'symbolization is in progress: reload in a few seconds',
};

export function statusText(s) { return String(s || 'unknown').replace(/_/g, ' '); }

// One line: "build ID 9d47… (libfoo.so) not found: upload …".
export function adviceFor(b, withId) {
  const adv = (ADVICE[b.status] || (() => statusText(b.status)))();
  return el('span', null,
    withId ? ['build ID ', el('code', { title: b.buildId || '' }, b.buildId || '(none)'), b.binary ? ` (${b.binary}) ` : ' '] : null,
    adv,
    b.reason ? el('span', { class: 'muted' }, ` — ${b.reason}`) : null);
}

// The server's unwinding verdicts (docs/symbolization.md, "Unwinding or
// symbolization") worth a look: not "ok".
export function brokenUnwinding(status) {
  return status && Array.isArray(status.unwinding) ? status.unwinding.filter((u) => u.verdict && u.verdict !== 'ok') : [];
}

// One line: "api (build 9d47…): 100% of its stacks are cut short", then the server's fix.
export function unwindingFor(u) {
  const what = u.verdict === 'truncated'
    ? `${fmtPct((u.truncatedShare || 0) * 100)} of its stacks are cut short (they stop before an entry point such as _start or clone)`
    : u.verdict === 'interpreter'
      ? `${fmtPct((u.shortInterpreterShare || 0) * 100)} of its stacks are one or two interpreter frames`
      : statusText(u.verdict);
  return el('span', null, el('strong', null, u.binary || '(unknown binary)'),
    u.buildId ? [' (build ', el('code', { title: u.buildId }, u.buildId.slice(0, 12)), ')'] : null, `: ${what}`,
    u.fix ? el('div', { class: 'muted' }, 'fix: ' + u.fix) : null);
}

export function renderSymbolsTable(box, ids) {
  const list = ids.slice().sort((a, b) => (b.samplesShare || 0) - (a.samplesShare || 0));
  box.replaceChildren(list.length ? el('table', { class: 'top symbols' },
    el('thead', null, el('tr', null, ['Build ID', 'Binary', 'Status', 'Samples', 'Reason', 'What to do'].map((h) => el('th', null, h)))),
    el('tbody', null, list.map((b) => el('tr', { 'data-build-id': b.buildId || '', 'data-status': b.status || '' },
      el('td', null, el('code', null, b.buildId || '(none)')),
      el('td', null, b.binary || ''),
      el('td', null, el('span', { class: 'tag st-' + (b.status || 'unknown') }, statusText(b.status))),
      el('td', { class: 'num' }, Number.isFinite(b.samplesShare) ? fmtPct(b.samplesShare * 100) : ''),
      el('td', null, b.reason || ''),
      el('td', null, b.status === 'ok' ? '' : adviceFor({ status: b.status }, false))))))
    : el('p', { class: 'muted' }, 'no build IDs in this selection'));
}

// The releases of a service: name, label, time range, profiles, build IDs and their status.
export function renderReleasesTable(box, rels, fmtTime) {
  const table = el('table', { class: 'top' },
    el('thead', null, el('tr', null, el('th', null, 'Release'), el('th', null, 'Label'), el('th', null, 'From'),
      el('th', null, 'Until'), el('th', null, 'Profiles'), el('th', null, 'Build IDs'))),
    el('tbody', null, rels.map((r) => el('tr', { 'data-release': r.name },
      el('td', { class: 'fn' }, r.name), el('td', null, r.label),
      el('td', null, fmtTime(r.from / 1000)), el('td', null, fmtTime(r.until / 1000)),
      el('td', { class: 'num' }, String(r.profiles)),
      el('td', null, (r.buildIDs || []).filter((b) => b.share >= 0.01).map((b) => el('div', null,
        el('span', { class: 'tag st-' + b.status }, statusText(b.status)), ' ',
        el('code', null, b.buildID.slice(0, 12)), ' ', b.file.split('/').pop(), ' ',
        el('span', { class: 'muted' }, fmtPct(b.share * 100)))))))));
  box.replaceChildren(rels.length ? table : el('div', { class: 'muted' }, 'no releases in this time range'));
}

// The ranked rows of a regression report; o.onPick(row) on a click.
export function renderRegressionTable(box, rep, o) {
  const pc = (v) => (v === null || v === undefined ? 'new' : (v > 0 ? '+' : '') + fmtPct(v * 100));
  const lead = (r) => {
    const fl = (v) => v === 'regressed' || v === 'improved' || v === 'new' || v === 'gone';
    if (fl(r.self.verdict)) return ['self', r.self];
    if (fl(r.total.verdict)) return ['total', r.total];
    if (r.self.verdict === 'below noise floor' && r.total.verdict === 'unchanged') return ['total', r.total];
    return ['self', r.self];
  };
  const judged = (s) => !['below noise floor', 'too few profiles', 'unnamed'].includes(s.verdict);
  const rows = rep.rows || [];
  const table = el('table', { class: 'top regress' },
    el('thead', null, el('tr', null, el('th', null, 'Verdict'), el('th', null, 'Function'),
      el('th', null, 'Self'), el('th', null, 'Δ self'), el('th', null, 'Total'), el('th', null, 'Δ total'),
      el('th', null, 'Confidence'))),
    el('tbody', null, rows.map((r) => {
      const [m, s] = lead(r);
      return el('tr', { 'data-function': r.function, 'data-verdict': s.verdict, class: r.flagged ? 'flagged' : '',
        title: r.unnamed ? 'frames without names: upload this build ID\'s debug info' : 'click: the diff flame graph focused on this function',
        onclick: () => o.onPick(r) },
      el('td', null, el('span', { class: 'tag v-' + s.verdict }, s.verdict + (m === 'total' && r.flagged ? ' (total)' : ''))),
      el('td', { class: 'fn' }, r.unnamed ? [r.mapping, ' ', el('span', { class: 'muted' }, `no names: build ID ${r.buildID || 'unknown'}: ${r.status}`)] : r.function),
      el('td', { class: 'num' }, `${fmtPct(r.self.baseline * 100)} → ${fmtPct(r.self.candidate * 100)}`),
      el('td', { class: 'num' }, pc(r.self.change)),
      el('td', { class: 'num' }, `${fmtPct(r.total.baseline * 100)} → ${fmtPct(r.total.candidate * 100)}`),
      el('td', { class: 'num' }, pc(r.total.change)),
      el('td', { class: 'num' }, judged(s) ? (s.confidence >= 0.9999 ? '>99.99%' : fmtPct(s.confidence * 100)) : '–'));
    })));
  box.replaceChildren(rows.length ? table : el('div', { class: 'muted' }, 'no functions'));
}
