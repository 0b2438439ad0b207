// format.js - numbers, units, colours and small DOM helpers shared by views.

export function fmtValue(v, units) {
  if (!Number.isFinite(v)) return String(v);
  const u = (units || '').toLowerCase();
  if (u === 'nanoseconds' || u === 'ns') return fmtScaled(v / 1e9, 's');
  if (u === 'bytes') {
    const k = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < k.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(2) : String(Math.round(v))) + ' ' + k[i];
  }
  const s = Math.round(v).toLocaleString('en-US');
  return u && u !== 'samples' && u !== 'count' ? s + ' ' + u : s;
}

function fmtScaled(sec, unit) {
  const a = Math.abs(sec);
  if (a >= 3600) return (sec / 3600).toFixed(2) + ' h';
  if (a >= 60) return (sec / 60).toFixed(2) + ' min';
  if (a >= 1) return sec.toFixed(2) + ' ' + unit;
  if (a >= 1e-3) return (sec * 1e3).toFixed(2) + ' ms';
  if (a >= 1e-6) return (sec * 1e6).toFixed(2) + ' µs';
  return (sec * 1e9).toFixed(0) + ' ns';
}

export function fmtPct(p) {
  if (!Number.isFinite(p)) return p > 0 ? '+∞' : '−∞';
  if (p !== 0 && Math.abs(p) < 0.01) return (p < 0 ? '-' : '') + '<0.01%';
  return p.toFixed(2) + '%';
}

export function fmtTime(sec) {
  const d = new Date(sec * 1000);
  const p = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of kids.flat()) if (c !== null && c !== undefined && c !== false) e.append(c.nodeType ? c : String(c));
  return e;
}

// ---- colours ----------------------------------------------------------------

// 24 warm colours for "by package/binary" colouring, like classic flame graphs.
export const PALETTE = [];
for (let i = 0; i < 24; i++) {
  const h = 8 + ((i * 37) % 50);          // red..yellow
  const l = 56 + ((i * 7) % 14);
  PALETTE.push(`hsl(${h},${72 + (i % 3) * 8}%,${l}%)`);
}
export const COOL = [];
for (let i = 0; i < 12; i++) COOL.push(`hsl(${190 + ((i * 23) % 60)},45%,${62 + (i % 4) * 4}%)`);

export function hashStr(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return h >>> 0;
}

const UNNAMED = /^(.+)\+0x[0-9a-fA-F]+$/;

// Package of a function name: Go "a/b/c.F" → "a/b/c", C++ "ns::C::f" → "ns",
// Rust "crate::m::f" → "crate", "lib.so+0x12" → "lib.so", else the name.
export function packageOf(name) {
  const u = UNNAMED.exec(name);
  if (u) return u[1];
  let s = name.replace(/\(.*$/, '').replace(/<.*$/, '');
  const cc = s.indexOf('::');
  if (cc > 0) return s.slice(0, cc);
  const slash = s.lastIndexOf('/');
  const dot = s.indexOf('.', slash + 1);
  if (dot > 0) return s.slice(0, dot);
  const us = s.indexOf('_');
  if (us > 0) return s.slice(0, us);
  return s;
}

export function binaryOf(name, binaries, id) {
  if (binaries && binaries[id]) return binaries[id];
  const u = UNNAMED.exec(name);
  return u ? u[1] : '';
}

// Diff palettes: [slower, same, faster] as rgb arrays.
export const DIFF_PALETTES = {
  default: { slower: [200, 0, 0], same: [148, 142, 142], faster: [0, 170, 0], slowerName: 'red', fasterName: 'green' },
  colorblind: { slower: [220, 50, 32], same: [148, 142, 142], faster: [26, 133, 255], slowerName: 'red', fasterName: 'blue' },
};

// Relative change in percent of the comparison share against the baseline;
// +Infinity for new, -100 for removed.
export function diffPercent(lv, rv, lTot, rTot, mode) {
  const pl = mode === 'absolute' ? lv : (lTot ? lv / lTot : 0);
  const pr = mode === 'absolute' ? rv : (rTot ? rv / rTot : 0);
  if (pl === 0) return pr > 0 ? Infinity : 0;
  return ((pr - pl) / pl) * 100;
}

export function diffColor(pct, palette) {
  const p = DIFF_PALETTES[palette] || DIFF_PALETTES.default;
  const t = Math.max(-1, Math.min(1, pct / 100));
  const to = t >= 0 ? p.slower : p.faster, a = Math.abs(t), g = p.same;
  const c = [0, 1, 2].map((i) => Math.round(g[i] + (to[i] - g[i]) * a));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}
