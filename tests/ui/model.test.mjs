// model.test.mjs - the UI's flamebearer decoder and derived views
// (web/ui/model.js) checked in node against trees built here: round trips,
// recursion-aware totals, sandwich, folded stacks, search, and clear errors
// on malformed answers.  No browser or server needed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeFlamebearer, topTable, sandwich, folded, searchModel, unnamedShare } from '../../web/ui/model.js';
import { makeTree, toFlamebearer, toDiff, countNodes } from './fixtures/gen.mjs';

// tree from folded lines
function fromFolded(lines) {
  const root = { name: 'total', self: 0, children: new Map() };
  for (const l of lines) {
    const [stack, v] = l.split(' ');
    let cur = root;
    for (const f of stack.split(';')) {
      if (!cur.children.has(f)) cur.children.set(f, { name: f, self: 0, children: new Map() });
      cur = cur.children.get(f);
    }
    cur.self += Number(v);
  }
  return root;
}

test('decode: every node, totals and parents of a 16k-node tree', () => {
  const t = makeTree(3, 16000, { unnamed: true });
  const m = decodeFlamebearer(toFlamebearer(t));
  assert.equal(m.n, countNodes(t));
  for (let i = 1; i < m.n; i++) {
    const p = m.parent[i];
    assert.ok(m.x[i] >= m.x[p] && m.x[i] + m.total[i] <= m.x[p] + m.total[p], 'child inside parent');
  }
  let selfSum = 0;
  for (let i = 0; i < m.n; i++) selfSum += m.self[i];
  assert.equal(selfSum, m.rootTotal);
});

test('folded stacks round-trip, and of a focused subtree', () => {
  const lines = ['a;b;c 5', 'a;b 2', 'a;d 3', 'e 7', 'a;b;c;b 1'];
  const m = decodeFlamebearer(toFlamebearer(fromFolded(lines)));
  assert.deepEqual(folded(m).trim().split('\n').sort(), lines.slice().sort());
  const b = m.findPath(['a', 'b']);
  assert.deepEqual(folded(m, b).trim().split('\n').sort(), ['a;b 2', 'a;b;c 5', 'a;b;c;b 1']);
});

test('top table counts a recursive function once per stack', () => {
  const m = decodeFlamebearer(toFlamebearer(fromFolded(['a;b;a;b 4', 'a;c 6'])));
  const rows = new Map(topTable(m).map((r) => [r.name, r]));
  assert.equal(rows.get('a').total, 10);
  assert.equal(rows.get('b').total, 4);
  assert.equal(rows.get('b').self, 4);
  assert.equal(rows.get('c').self, 6);
});

test('sandwich: callers and callees of a function', () => {
  const m = decodeFlamebearer(toFlamebearer(fromFolded(['main;x;f;g 3', 'main;y;f 2', 'main;y;f;h 1', 'main;z 9'])));
  const s = sandwich(m, m.names.indexOf('f'));
  assert.equal(s.callers.rootTotal, 6);
  assert.equal(s.callees.rootTotal, 6);
  const callers = new Map(topTable(s.callers).map((r) => [r.name, r.total]));
  assert.equal(callers.get('x'), 3);
  assert.equal(callers.get('y'), 3);
  assert.equal(callers.get('main'), 6);
  const callees = new Map(topTable(s.callees).map((r) => [r.name, r.total]));
  assert.equal(callees.get('g'), 3);
  assert.equal(callees.get('h'), 1);
  assert.equal(callees.has('z'), false);
});

test('search counts matches and does not count nested matches twice', () => {
  const m = decodeFlamebearer(toFlamebearer(fromFolded(['a;json1;json2 4', 'a;b 6', 'json3 5'])));
  const r = searchModel(m, 'JSON');
  assert.equal(r.count, 3);
  assert.equal(r.value, 9);
});

test('unnamed frames: share per binary', () => {
  const m = decodeFlamebearer(toFlamebearer(fromFolded(['main;libfoo.so+0x1a2b 3', 'main;f 7'])));
  const u = unnamedShare(m);
  assert.equal(u.share, 0.3);
  assert.deepEqual(u.perBinary, [{ binary: 'libfoo.so', share: 0.3 }]);
});

test('diff: both sides decoded, ticks from the top level', () => {
  const l = fromFolded(['a;b 4', 'a;c 6']), r = fromFolded(['a;b 8', 'a;d 2']);
  const m = decodeFlamebearer(toDiff(l, r));
  assert.equal(m.diff, true);
  assert.equal(m.leftTicks, 10);
  assert.equal(m.rightTicks, 10);
  const rows = new Map(topTable(m).map((x) => [x.name, x]));
  assert.deepEqual([rows.get('b').ls, rows.get('b').rs], [4, 8]);
  assert.deepEqual([rows.get('c').lt, rows.get('c').rt], [6, 0]);
  assert.deepEqual([rows.get('d').lt, rows.get('d').rt], [0, 2]);
});

test('malformed answers are rejected with a clear message', () => {
  const ok = toFlamebearer(fromFolded(['a;b 4']));
  const bad = (mut, re) => {
    const j = JSON.parse(JSON.stringify(ok));
    mut(j);
    assert.throws(() => decodeFlamebearer(j), re);
  };
  bad((j) => { delete j.flamebearer.levels; }, /names\/levels missing/);
  bad((j) => { j.flamebearer.levels[1].push(1); }, /multiple of 4/);
  bad((j) => { j.flamebearer.levels[1][3] = 99; }, /name index 99 out of range/);
  bad((j) => { j.flamebearer.levels[1][1] = -1; }, /negative/);
  bad((j) => { j.flamebearer.levels[2][0] = 1000; }, /no parent/);
  bad((j) => { j.flamebearer.levels[1][1] = 1000; j.flamebearer.levels[1][2] = 1; }, /wider than its parent/);
  bad((j) => { j.flamebearer.levels[0].push(0, 1, 1, 0); }, /more than one root/);
  assert.throws(() => decodeFlamebearer(null), /not an object/);
});
