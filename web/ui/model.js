// model.js - the flame tree of the unhex UI as flat typed arrays.
//
// A Model holds every node of one tree, ordered level by level (depth 0 is
// the root "total") and, inside a level, by x.  Because a flamebearer tree is
// laid out as nested intervals, the children of a node are a contiguous run
// of the next level; firstChild/childEnd give that run.  All positions are in
// ticks (sample values); the renderer scales them to pixels.
//
// Inputs are server responses, so the decoders check every index and length
// and throw Error("malformed flamebearer: ...") instead of producing garbage.
//
// Diff trees (format "double") keep both sides: lt/ls/rt/rs are the left
// (baseline) and right (comparison) total and self; total/self are their sums
// and decide the widths, as in Pyroscope's diff view.

export const MAX_NODES = 2000000;

export class Model {
  constructor(names, n, diff) {
    this.names = names;       // string per name id
    this.n = n;               // number of nodes
    this.diff = diff;         // true for a two-sided (diff) tree
    this.x = new Float64Array(n);
    this.total = new Float64Array(n);
    this.self = new Float64Array(n);
    this.name = new Int32Array(n);
    this.parent = new Int32Array(n);
    this.level = new Int32Array(n);
    this.firstChild = new Int32Array(n).fill(-1);
    this.childEnd = new Int32Array(n).fill(-1);
    this.levelStart = [0];    // node index where each level begins; last = n
    if (diff) {
      this.lt = new Float64Array(n);
      this.ls = new Float64Array(n);
      this.rt = new Float64Array(n);
      this.rs = new Float64Array(n);
    }
    this.leftTicks = 0;
    this.rightTicks = 0;
    this.units = '';
    this.binaries = null;     // optional per-name binary (string array)
  }

  get depth() { return this.levelStart.length - 1; }
  get rootTotal() { return this.n ? this.total[0] : 0; }

  // Links children to parents; called once all nodes are placed.
  link() {
    for (let i = 1; i < this.n; i++) {
      const p = this.parent[i];
      if (this.firstChild[p] < 0) this.firstChild[p] = i;
      this.childEnd[p] = i + 1;
    }
  }

  // Names from the root (exclusive) down to node i (inclusive).
  path(i) {
    const out = [];
    for (; i > 0; i = this.parent[i]) out.push(this.names[this.name[i]]);
    return out.reverse();
  }

  // Finds the node reached by following `names` from the root; -1 if absent.
  findPath(names) {
    let cur = 0;
    for (const nm of names) {
      let next = -1;
      for (let c = this.firstChild[cur]; c >= 0 && c < this.childEnd[cur]; c++) {
        if (this.names[this.name[c]] === nm) { next = c; break; }
      }
      if (next < 0) return -1;
      cur = next;
    }
    return cur;
  }

  // Last node of level d whose x <= t, or -1 (binary search).
  lastAtOrBefore(d, t) {
    let lo = this.levelStart[d], hi = this.levelStart[d + 1] - 1, ans = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.x[mid] <= t) { ans = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return ans;
  }

  // First node of level d whose end (x + total) is > t.
  firstEndingAfter(d, t) {
    let lo = this.levelStart[d], hi = this.levelStart[d + 1] - 1, ans = hi + 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.x[mid] + this.total[mid] > t) { ans = mid; hi = mid - 1; } else lo = mid + 1;
    }
    return ans;
  }
}

function bad(what) { throw new Error('malformed flamebearer: ' + what); }

function isCount(v) { return typeof v === 'number' && Number.isFinite(v) && v >= 0; }

// Decodes a render / render-diff response (the whole JSON object).
export function decodeFlamebearer(resp) {
  if (!resp || typeof resp !== 'object') bad('not an object');
  const fb = resp.flamebearer;
  if (!fb || !Array.isArray(fb.names) || !Array.isArray(fb.levels)) bad('flamebearer.names/levels missing');
  const format = (resp.metadata && resp.metadata.format) || (fb.levels.length && fb.levels[0].length === 7 ? 'double' : 'single');
  const diff = format === 'double';
  const step = diff ? 7 : 4;
  let n = 0;
  for (const lv of fb.levels) {
    if (!Array.isArray(lv) || lv.length % step) bad('a level is not a multiple of ' + step + ' integers');
    n += lv.length / step;
  }
  if (n > MAX_NODES) bad('more than ' + MAX_NODES + ' nodes');
  const names = fb.names.map((s) => String(s));
  const m = new Model(names, n, diff);
  m.units = (resp.metadata && resp.metadata.units) || '';
  // Pyroscope's cpu metadata: "samples" at rate 1e9 are nanoseconds.
  if (m.units === 'samples' && resp.metadata.sampleRate === 1e9) m.units = 'nanoseconds';
  m.format = format;
  if (Array.isArray(fb.binaries) && fb.binaries.length === names.length) m.binaries = fb.binaries.map(String);
  let k = 0;
  for (let d = 0; d < fb.levels.length; d++) {
    const lv = fb.levels[d];
    let prevEnd = 0, lPrevEnd = 0, rPrevEnd = 0;
    let pj = d > 0 ? m.levelStart[d - 1] : -1;
    const pEnd = d > 0 ? m.levelStart[d] : -1;
    for (let o = 0; o < lv.length; o += step, k++) {
      let x, total, self, ni;
      if (!diff) {
        const [dx, t, s, id] = [lv[o], lv[o + 1], lv[o + 2], lv[o + 3]];
        if (!isCount(dx) || !isCount(t) || !isCount(s)) bad('negative or non-numeric value at level ' + d);
        x = prevEnd + dx; total = t; self = s; ni = id;
        prevEnd = x + t;
      } else {
        const [ldx, lt, ls, rdx, rt, rs, id] = lv.slice(o, o + 7);
        if (![ldx, lt, ls, rdx, rt, rs].every(isCount)) bad('negative or non-numeric value at level ' + d);
        const lx = lPrevEnd + ldx, rx = rPrevEnd + rdx;
        lPrevEnd = lx + lt; rPrevEnd = rx + rt;
        x = lx + rx; total = lt + rt; self = ls + rs; ni = id;
        m.lt[k] = lt; m.ls[k] = ls; m.rt[k] = rt; m.rs[k] = rs;
      }
      if (!Number.isInteger(ni) || ni < 0 || ni >= names.length) bad('name index ' + ni + ' out of range');
      if (self > total) bad('self greater than total at level ' + d);
      m.x[k] = x; m.total[k] = total; m.self[k] = self; m.name[k] = ni; m.level[k] = d;
      if (d === 0) {
        if (o > 0) bad('more than one root');
        m.parent[k] = -1;
      } else {
        while (pj < pEnd && m.x[pj] + m.total[pj] <= x) pj++;
        if (pj >= pEnd || x < m.x[pj]) bad('node at level ' + d + ' has no parent');
        if (x + total > m.x[pj] + m.total[pj] + 1e-6) bad('node at level ' + d + ' is wider than its parent');
        m.parent[k] = pj;
      }
    }
    m.levelStart.push(k);
  }
  m.link();
  m.numTicks = diff ? m.rootTotal : (isCount(fb.numTicks) && fb.numTicks > 0 ? fb.numTicks : m.rootTotal);
  if (diff) {
    // Pyroscope puts leftTicks/rightTicks at the top level; accept both places.
    const lt = isCount(resp.leftTicks) ? resp.leftTicks : fb.leftTicks, rt = isCount(resp.rightTicks) ? resp.rightTicks : fb.rightTicks;
    m.leftTicks = isCount(lt) ? lt : (n ? m.lt[0] : 0);
    m.rightTicks = isCount(rt) ? rt : (n ? m.rt[0] : 0);
  }
  return m;
}

// ---- building a model from a nested tree (sandwich views) -----------------

// A tree node: {name, total, self, children: Map<string, node>}.
export function treeNode(name) { return { name, total: 0, self: 0, children: new Map() }; }

export function treeChild(node, name) {
  let c = node.children.get(name);
  if (!c) { c = treeNode(name); node.children.set(name, c); }
  return c;
}

// Lays a nested tree out as a Model; children sorted by name, left-aligned.
export function modelFromTree(root, units) {
  const levels = [[root]];
  let n = 1;
  for (;;) {
    const next = [];
    for (const nd of levels[levels.length - 1]) {
      nd.sorted = [...nd.children.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const c of nd.sorted) next.push(c);
    }
    if (!next.length) break;
    n += next.length;
    levels.push(next);
  }
  const names = [], ids = new Map();
  const intern = (s) => { let v = ids.get(s); if (v === undefined) { v = names.length; names.push(s); ids.set(s, v); } return v; };
  const m = new Model(names, n, false);
  m.units = units || '';
  let k = 0;
  root.x = 0; root.idx = -1;
  for (let d = 0; d < levels.length; d++) {
    for (const nd of levels[d]) {
      nd.k = k;
      m.x[k] = nd.x; m.total[k] = nd.total; m.self[k] = nd.self; m.name[k] = intern(nd.name);
      m.level[k] = d; m.parent[k] = nd.parentK === undefined ? -1 : nd.parentK;
      let cx = nd.x;
      for (const c of nd.sorted) { c.x = cx; c.parentK = k; cx += c.total; }
      k++;
    }
    m.levelStart.push(k);
  }
  m.link();
  m.numTicks = m.rootTotal;
  return m;
}

// ---- derived views ---------------------------------------------------------

// Walks the subtree of `start` depth-first (pre-order), calling
// enter(i) and leave(i); iterative so deep trees cannot overflow the stack.
export function walk(m, start, enter, leave) {
  const stack = [start], state = [0];
  enter(start);
  while (stack.length) {
    const top = stack.length - 1, i = stack[top];
    const c = m.firstChild[i] < 0 ? -1 : m.firstChild[i] + state[top];
    if (c >= 0 && c < m.childEnd[i]) {
      state[top]++;
      enter(c);
      stack.push(c); state.push(0);
    } else {
      stack.pop(); state.pop();
      if (leave) leave(i);
    }
  }
}

// Per-function self and total (a function counted once per stack even when it
// recurses).  Diff models also get per-side values.  Returns rows keyed by
// name id: {id, name, self, total, ls, lt, rs, rt}.
export function topTable(m, start = 0) {
  const rows = new Map();
  const onStack = new Int32Array(m.names.length);
  const row = (id) => {
    let r = rows.get(id);
    if (!r) { r = { id, name: m.names[id], self: 0, total: 0, ls: 0, lt: 0, rs: 0, rt: 0 }; rows.set(id, r); }
    return r;
  };
  walk(m, start, (i) => {
    if (i === 0) return;
    const id = m.name[i], r = row(id);
    r.self += m.self[i];
    if (m.diff) { r.ls += m.ls[i]; r.rs += m.rs[i]; }
    if (onStack[id] === 0) {
      r.total += m.total[i];
      if (m.diff) { r.lt += m.lt[i]; r.rt += m.rt[i]; }
    }
    onStack[id]++;
  }, (i) => { if (i !== 0) onStack[m.name[i]]--; });
  return [...rows.values()];
}

// Outermost occurrences of name id `id` (those with no ancestor of that name).
function outermost(m, id) {
  const out = [];
  let depthOn = 0;
  walk(m, 0, (i) => {
    if (m.name[i] === id && i !== 0) { if (depthOn === 0) out.push(i); depthOn++; }
  }, (i) => { if (m.name[i] === id && i !== 0) depthOn--; });
  return out;
}

// Sandwich of function `id`: {callers, callees} models.  In callers the root
// is the function and its children are its callers (inverted stacks); in
// callees the root is the function and below are the functions it calls.
export function sandwich(m, id) {
  const fname = m.names[id];
  const occ = outermost(m, id);
  const callees = treeNode(fname), callers = treeNode(fname);
  for (const o of occ) {
    callees.total += m.total[o]; callees.self += m.self[o];
    callers.total += m.total[o];
    // callers: walk up to the root
    let t = callers;
    for (let p = m.parent[o]; p > 0; p = m.parent[p]) {
      t = treeChild(t, m.names[m.name[p]]);
      t.total += m.total[o];
    }
    t.self += m.total[o];
    // callees: merge the subtree below o
    const stack = [[o, callees]];
    while (stack.length) {
      const [src, dst] = stack.pop();
      for (let c = m.firstChild[src]; c >= 0 && c < m.childEnd[src]; c++) {
        const d = treeChild(dst, m.names[m.name[c]]);
        d.total += m.total[c]; d.self += m.self[c];
        stack.push([c, d]);
      }
    }
  }
  return { callers: modelFromTree(callers, m.units), callees: modelFromTree(callees, m.units) };
}

// Folded stacks ("a;b;c value" per line) of the subtree of `start`, full paths
// from the root.  For diff models, `side` picks 'left' or 'right' values.
export function folded(m, start = 0, side) {
  const lines = [];
  const selfOf = (i) => (!m.diff ? m.self[i] : side === 'left' ? m.ls[i] : m.rs[i]);
  const prefix = start > 0 ? m.path(m.parent[start]) : [];
  const stack = [...prefix];
  walk(m, start, (i) => {
    if (i !== 0) stack.push(m.names[m.name[i]].replace(/[;\n]/g, '_'));
    const v = selfOf(i);
    if (v > 0 && stack.length) lines.push(stack.join(';') + ' ' + v);
  }, (i) => { if (i !== 0) stack.pop(); });
  return lines.join('\n') + (lines.length ? '\n' : '');
}

// Nodes whose name contains `term` (case-insensitive), and the share of the
// root they cover without counting nested matches twice.
export function searchModel(m, term) {
  const match = new Uint8Array(m.n);
  if (!term) return { match, count: 0, value: 0 };
  const t = term.toLowerCase();
  const nameHit = m.names.map((s) => s.toLowerCase().includes(t));
  const covered = new Uint8Array(m.n);
  let count = 0, value = 0;
  for (let i = 1; i < m.n; i++) {
    const p = m.parent[i];
    const hit = nameHit[m.name[i]];
    if (hit) { match[i] = 1; count++; if (!covered[p]) value += m.total[i]; }
    covered[i] = covered[p] || hit ? 1 : 0;
  }
  return { match, count, value };
}

// A frame that the symbolizer could not name: "<binary>+0x<hex>".
export const UNNAMED_RE = /^(.+)\+0x[0-9a-fA-F]+$/;

// Share of samples whose leaf frame is unnamed, per binary.
export function unnamedShare(m) {
  let self = 0;
  const per = new Map();
  for (let i = 1; i < m.n; i++) {
    const g = UNNAMED_RE.exec(m.names[m.name[i]]);
    if (g && m.self[i] > 0) {
      self += m.self[i];
      per.set(g[1], (per.get(g[1]) || 0) + m.self[i]);
    }
  }
  const tot = m.rootTotal || 1;
  return { share: self / tot, perBinary: [...per].map(([binary, v]) => ({ binary, share: v / tot })) };
}
