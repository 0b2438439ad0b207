// flame.js - canvas flame graph renderer.
//
// One <canvas> per graph, scaled by devicePixelRatio.  A render walks only the
// visible range of each level (binary search for the first node, stop at the
// right edge), skips bars under half a pixel, draws labels only on bars wide
// enough for a few characters and truncates them by a measured monospace
// character width (no per-bar clipping).  Hit testing is a binary search in
// the hovered level.  Everything else (tooltip, breadcrumbs) is DOM.
//
// Options: orientation 'icicle' (root on top) or 'flame' (root at bottom);
// colorBy 'package' | 'binary'; for diff models diffMode 'relative' |
// 'absolute' and palette 'default' | 'colorblind'.

import { PALETTE, COOL, hashStr, packageOf, binaryOf, diffPercent, diffColor, DIFF_PALETTES, fmtValue, fmtPct, el } from './format.js';
import { searchModel } from './model.js';

const ROW = 20;          // px per level
const FONT = '12px monospace';
const HIDE = 0.5;        // bars narrower than this are not drawn
const LABEL_MIN = 28;    // px needed before a label is drawn

export class FlameGraph {
  constructor(container, opts = {}) {
    this.container = container;
    this.opts = { orientation: 'icicle', colorBy: 'package', diffMode: 'relative', palette: 'default', ...opts };
    this.canvas = el('canvas', { class: 'flame-canvas' });
    this.tip = el('div', { class: 'tooltip', role: 'tooltip', hidden: true });
    container.append(this.canvas, this.tip);
    this.model = null;
    this.focus = 0;
    this.search = '';
    this.hits = null;
    this.hover = -1;
    this.onFocus = null;      // (nodeIndex) => void
    this.onSearch = null;     // ({count, value, total}) => void
    this.renderMs = 0;
    this.colorCache = new Map();
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => { this.tip.hidden = true; this.hover = -1; });
    this.canvas.addEventListener('click', (e) => {
      const i = this.hit(e.offsetX, e.offsetY);
      if (i >= 0) this.setFocus(i);
    });
    this.ro = new ResizeObserver(() => { if (this.model && this.canvas.clientWidth !== this.lastW) this.render(); });
    this.ro.observe(container);
  }

  setModel(m, focus = 0) {
    this.model = m;
    this.focus = focus >= 0 && focus < m.n ? focus : 0;
    this.colorCache.clear();
    this.applySearch();
    this.render();
  }

  setOptions(o) {
    Object.assign(this.opts, o);
    this.colorCache.clear();
    if (this.model) this.render();
  }

  setFocus(i) {
    this.focus = i;
    this.render();
    if (this.onFocus) this.onFocus(i);
  }

  setSearch(term) {
    this.search = term || '';
    this.applySearch();
    if (this.model) this.render();
  }

  applySearch() {
    if (!this.model) return;
    this.hits = this.search ? searchModel(this.model, this.search) : null;
    if (this.onSearch) this.onSearch(this.hits ? { count: this.hits.count, value: this.hits.value, total: this.model.rootTotal } : null);
  }

  // Colour of node i (string).
  color(i) {
    const m = this.model;
    if (m.diff) {
      const pct = this.diffPct(i);
      if (pct === Infinity) return rgb(DIFF_PALETTES[this.opts.palette].slower, 0.75);
      if (m.rt[i] === 0 && m.lt[i] > 0) return rgb(DIFF_PALETTES[this.opts.palette].faster, 0.75);
      return diffColor(pct, this.opts.palette);
    }
    const id = m.name[i];
    let c = this.colorCache.get(id);
    if (c === undefined) {
      const nm = m.names[id];
      if (this.opts.colorBy === 'binary') {
        const b = binaryOf(nm, m.binaries, id);
        c = b ? PALETTE[hashStr(b) % PALETTE.length] : COOL[hashStr(packageOf(nm)) % COOL.length];
      } else {
        c = PALETTE[hashStr(packageOf(nm)) % PALETTE.length];
      }
      if (id === 0) c = 'hsl(0,0%,72%)';
      this.colorCache.set(id, c);
    }
    return c;
  }

  diffPct(i) {
    const m = this.model;
    return diffPercent(m.lt[i], m.rt[i], m.leftTicks, m.rightTicks, this.opts.diffMode);
  }

  label(i) {
    const m = this.model;
    let s = m.names[m.name[i]];
    if (m.diff) {
      if (m.lt[i] === 0 && m.rt[i] > 0) s = '[new] ' + s;
      else if (m.rt[i] === 0 && m.lt[i] > 0) s = '[removed] ' + s;
    }
    return s;
  }

  // Geometry of the current view.
  view() {
    const m = this.model, f = this.focus;
    const w = this.canvas.clientWidth || this.container.clientWidth || 800;
    return { w, fx: m.x[f], ft: m.total[f] || 1, fl: m.level[f], scale: w / (m.total[f] || 1) };
  }

  rowY(d) {
    return this.opts.orientation === 'flame' ? (this.model.depth - 1 - d) * ROW : d * ROW;
  }

  render() {
    const t0 = performance.now();
    const m = this.model;
    if (!m) return;
    const dpr = window.devicePixelRatio || 1;
    const cw = this.container.clientWidth || 800;
    const h = Math.max(1, m.depth) * ROW;
    this.lastW = cw;
    if (this.canvas.width !== Math.round(cw * dpr) || this.canvas.height !== Math.round(h * dpr)) {
      this.canvas.width = Math.round(cw * dpr);
      this.canvas.height = Math.round(h * dpr);
      this.canvas.style.width = cw + 'px';
      this.canvas.style.height = h + 'px';
    }
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cw, h);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    if (!this.charW) this.charW = ctx.measureText('mmmmmmmmmm').width / 10;
    const { w, fx, ft, fl, scale } = this.view();
    const hits = this.hits;
    const muted = 'rgba(200,200,200,0.55)';
    const labels = [];
    // ancestors of the focus: full width
    for (let a = this.focus; a >= 0; a = m.parent[a]) {
      const y = this.rowY(m.level[a]);
      ctx.fillStyle = hits && !hits.match[a] ? muted : this.color(a);
      ctx.fillRect(0, y, w, ROW - 1);
      labels.push(a, 0, y, w);
    }
    const end = fx + ft;
    for (let d = fl + 1; d < m.depth; d++) {
      const y = this.rowY(d);
      const hi = m.levelStart[d + 1];
      let any = false;
      for (let i = m.firstEndingAfter(d, fx); i < hi && m.x[i] < end; i++) {
        const pw = m.total[i] * scale;
        if (pw < HIDE) continue;
        any = true;
        const px = (m.x[i] - fx) * scale;
        ctx.fillStyle = hits && !hits.match[i] ? muted : this.color(i);
        ctx.fillRect(px, y, pw > 2 ? pw - 1 : pw, ROW - 1);
        if (pw >= LABEL_MIN) labels.push(i, px, y, pw);
      }
      if (!any && d > fl + 1) break;
    }
    // labels, truncated by measured character width
    const cwid = this.charW;
    for (let k = 0; k < labels.length; k += 4) {
      const i = labels[k], px = labels[k + 1], y = labels[k + 2], pw = labels[k + 3];
      const max = Math.floor((pw - 6) / cwid);
      if (max < 3) continue;
      let s = this.label(i);
      if (s.length > max) s = s.slice(0, max - 1) + '…';
      ctx.fillStyle = hits && !hits.match[i] ? '#777' : '#111';
      ctx.fillText(s, px + 3, y + ROW / 2);
    }
    if (hits) { // outline matches so they stand out even when tiny
      ctx.strokeStyle = '#6a00ff';
      ctx.lineWidth = 1;
      for (let d = fl + 1; d < m.depth; d++) {
        const hi = m.levelStart[d + 1];
        for (let i = m.firstEndingAfter(d, fx); i < hi && m.x[i] < end; i++) {
          if (!hits.match[i]) continue;
          const pw = m.total[i] * scale;
          if (pw < 2) continue;
          ctx.strokeRect((m.x[i] - fx) * scale + 0.5, this.rowY(d) + 0.5, pw - 2, ROW - 2);
        }
      }
    }
    this.renderMs = performance.now() - t0;
  }

  // Node under canvas point (CSS px), or -1.
  hit(px, py) {
    const m = this.model;
    if (!m) return -1;
    let d = Math.floor(py / ROW);
    if (this.opts.orientation === 'flame') d = m.depth - 1 - d;
    if (d < 0 || d >= m.depth) return -1;
    const { fx, fl, scale } = this.view();
    if (d <= fl) {
      let a = this.focus;
      while (a >= 0 && m.level[a] > d) a = m.parent[a];
      return a;
    }
    const t = fx + px / scale;
    const i = m.lastAtOrBefore(d, t);
    if (i < 0 || t >= m.x[i] + m.total[i]) return -1;
    // must be inside the focused subtree
    let a = i;
    while (a >= 0 && m.level[a] > fl) a = m.parent[a];
    return a === this.focus ? i : -1;
  }

  // Centre of node i in CSS px relative to the canvas, or null if hidden.
  locate(i) {
    const m = this.model;
    const { fx, ft, scale } = this.view();
    if (m.x[i] + m.total[i] <= fx || m.x[i] >= fx + ft) return null;
    const x0 = Math.max(0, (m.x[i] - fx) * scale), x1 = Math.min(this.lastW, (m.x[i] + m.total[i] - fx) * scale);
    return { x: (x0 + x1) / 2, y: this.rowY(m.level[i]) + ROW / 2, w: x1 - x0 };
  }

  tooltipData(i) {
    const m = this.model, tot = m.rootTotal || 1;
    const d = { name: m.names[m.name[i]], total: m.total[i], self: m.self[i], totalPct: (m.total[i] / tot) * 100, selfPct: (m.self[i] / tot) * 100 };
    if (m.diff) {
      Object.assign(d, {
        leftTotal: m.lt[i], rightTotal: m.rt[i], leftSelf: m.ls[i], rightSelf: m.rs[i],
        leftPct: m.leftTicks ? (m.lt[i] / m.leftTicks) * 100 : 0,
        rightPct: m.rightTicks ? (m.rt[i] / m.rightTicks) * 100 : 0,
        diffPct: this.diffPct(i),
        status: m.lt[i] === 0 && m.rt[i] > 0 ? 'new' : m.rt[i] === 0 && m.lt[i] > 0 ? 'removed' : 'changed',
      });
    }
    return d;
  }

  onMove(e) {
    const i = this.hit(e.offsetX, e.offsetY);
    this.hover = i;
    if (i < 0) { this.tip.hidden = true; return; }
    const d = this.tooltipData(i), u = this.model.units;
    this.tip.replaceChildren();
    this.tip.append(el('div', { class: 'tip-name', text: d.name }));
    if (!this.model.diff) {
      this.tip.append(
        el('div', { class: 'tip-total' }, `Total: ${fmtValue(d.total, u)} (${fmtPct(d.totalPct)})`),
        el('div', { class: 'tip-self' }, `Self: ${fmtValue(d.self, u)} (${fmtPct(d.selfPct)})`));
    } else {
      const change = d.status === 'new' ? 'new in comparison' : d.status === 'removed' ? 'removed in comparison'
        : `${d.diffPct > 0 && Number.isFinite(d.diffPct) ? '+' : ''}${fmtPct(d.diffPct)} ${d.diffPct > 0 ? '(slower)' : d.diffPct < 0 ? '(faster)' : ''}`;
      this.tip.append(el('table', null,
        el('tr', null, el('th'), el('th', { text: 'Baseline' }), el('th', { text: 'Comparison' })),
        el('tr', null, el('td', { text: '% of total' }), el('td', { text: fmtPct(d.leftPct) }), el('td', { text: fmtPct(d.rightPct) })),
        el('tr', null, el('td', { text: 'Total' }), el('td', { text: fmtValue(d.leftTotal, u) }), el('td', { text: fmtValue(d.rightTotal, u) })),
        el('tr', null, el('td', { text: 'Self' }), el('td', { text: fmtValue(d.leftSelf, u) }), el('td', { text: fmtValue(d.rightSelf, u) }))),
        el('div', { class: 'tip-diff' }, 'Change: ' + change));
    }
    this.tip.hidden = false;
    const r = this.container.getBoundingClientRect();
    let x = e.clientX - r.left + 14, y = e.clientY - r.top + 14;
    const tw = this.tip.offsetWidth;
    if (x + tw > r.width) x = Math.max(0, e.clientX - r.left - tw - 14);
    this.tip.style.left = x + 'px';
    this.tip.style.top = y + 'px';
    window.__unhex && (window.__unhex.lastTooltip = { ...d, text: this.tip.innerText });
  }
}

// Opaque colour c darkened by factor k (new/removed bars stand out from ±100 %).
function rgb(c, k) { return `rgb(${Math.round(c[0] * k)},${Math.round(c[1] * k)},${Math.round(c[2] * k)})`; }
