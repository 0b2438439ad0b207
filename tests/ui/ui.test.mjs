// ui.test.mjs - browser tests of the unhex UI against the REAL server.
//
// Run by tests/ui/run.sh, which starts `unhex serve` on 127.0.0.1:0 with
// workload-generator profiles (two services, version 1.4 then 1.5, raw
// addresses and no debug info uploaded) and sets:
//   UNHEX_URL  http://127.0.0.1:PORT   (required)
//   CHROMIUM   browser binary           (default /usr/bin/chromium)
//   SHOT_DIR   where screenshots go     (default docs/img of the repository;
//              run.sh passes a temporary dir unless SHOT_DIR is set)
//
// Expected values are computed here from the server's own JSON answers with
// an independent decoder, never taken from the page's code.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './fixtures/browser.mjs';
import { makeTree, toFlamebearer, countNodes } from './fixtures/gen.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const URL0 = process.env.UNHEX_URL;
const SHOTS = process.env.SHOT_DIR || path.resolve(HERE, '../../docs/img');
const ROW = 20; // px per level, as in web/ui/flame.js
// Every test fails within 30 s instead of hanging when the server lacks a route.
const T = { timeout: 30000 };

let browser;

before(async () => {
  assert.ok(URL0, 'UNHEX_URL must point at a running unhex server (tests/ui/run.sh sets it)');
  fs.mkdirSync(SHOTS, { recursive: true });
  browser = await launchChromium();
});

after(async () => { await browser?.close(); });

// A fresh page (own context = empty profile) that records console errors.
async function open(hash = '') {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 }, acceptDownloads: true });
  const page = await ctx.newPage();
  page.setDefaultTimeout(20000);
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('pageerror', (e) => problems.push('pageerror: ' + e));
  page.on('requestfailed', (r) => problems.push('requestfailed: ' + r.url()));
  const renderResp = page.waitForResponse((r) => r.url().includes('/pyroscope/render?'), { timeout: 20000 }).catch(() => null);
  await page.goto(URL0 + '/' + hash);
  return { ctx, page, problems, renderResp };
}

async function waitReady(page, flag = 'ready') {
  await page.waitForFunction((f) => window.__unhex && window.__unhex[f] === true, flag, { timeout: 20000 });
  const errs = await page.evaluate(() => window.__unhex.errors);
  assert.deepEqual(errs, [], 'the page showed an error');
}

// Independent decoder: flamebearer levels → nodes with absolute x, per level.
function decode(fb, diff) {
  const step = diff ? 7 : 4;
  return fb.levels.map((lv) => {
    const out = [];
    let a = 0, b = 0;
    for (let o = 0; o < lv.length; o += step) {
      if (!diff) {
        const x = a + lv[o];
        out.push({ x, total: lv[o + 1], self: lv[o + 2], name: fb.names[lv[o + 3]] });
        a = x + lv[o + 1];
      } else {
        const lx = a + lv[o], rx = b + lv[o + 3];
        out.push({ x: lx + rx, total: lv[o + 1] + lv[o + 4], lt: lv[o + 1], ls: lv[o + 2], rt: lv[o + 4], rs: lv[o + 5], name: fb.names[lv[o + 6]] });
        a = lx + lv[o + 1]; b = rx + lv[o + 4];
      }
    }
    return out;
  });
}

const pct = (v, t) => ((v / t) * 100).toFixed(2) + '%';

async function canvasBox(page, sel) {
  const b = await page.locator(sel).boundingBox();
  assert.ok(b && b.width > 100, 'canvas ' + sel + ' is laid out');
  return b;
}

// Pixel colour at CSS point (x, y) of a canvas.
function pixel(page, sel, x, y) {
  return page.evaluate(([s, px, py]) => {
    const c = document.querySelector(s), dpr = window.devicePixelRatio || 1;
    const d = c.getContext('2d').getImageData(Math.round(px * dpr), Math.round(py * dpr), 1, 1).data;
    return [d[0], d[1], d[2], d[3]];
  }, [sel, x, y]);
}

// The widest node at `level` whose bar is at least `minPx` wide.
function widest(levels, level, pred = () => true) {
  return (levels[level] || []).filter(pred).sort((a, b) => b.total - a.total)[0];
}

test('explore: page loads real data with no console errors', T, async () => {
  const { ctx, page, problems, renderResp } = await open();
  await waitReady(page);
  const resp = await renderResp;
  assert.ok(resp, 'the page asked /pyroscope/render');
  const j = await resp.json();
  assert.equal(j.flamebearer.names[0], 'total');
  const n = await page.evaluate(() => window.__unhex.model.n);
  const expected = decode(j.flamebearer, false).reduce((s, l) => s + l.length, 0);
  assert.equal(n, expected, 'every node of the answer is in the graph');
  assert.ok(n > 100, 'real profiles give a real tree');
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, /type=/, 'state is in the URL');
  console.log(`# real-data first render: ${(await page.evaluate(() => window.__unhex.firstRenderMs)).toFixed(1)} ms for ${n} nodes`);
  await page.screenshot({ path: path.join(SHOTS, 'explore.png') });
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('explore: hover shows the right tooltip numbers, click focuses, the link restores focus', T, async () => {
  const { ctx, page, problems, renderResp } = await open();
  await waitReady(page);
  const j = await (await renderResp).json();
  const levels = decode(j.flamebearer, false);
  const total = levels[0][0].total;
  await page.click('#layout button[data-v="flame"]');
  const box = await canvasBox(page, '#flame canvas');
  const scale = box.width / total;
  // a wide node two levels down
  const node = widest(levels, 2) || widest(levels, 1);
  const level = levels.indexOf(levels.find((l) => l.includes(node)));
  const cx = (node.x + node.total / 2) * scale, cy = level * ROW + ROW / 2;
  await page.mouse.move(box.x + cx, box.y + cy);
  await page.waitForSelector('#flame .tooltip:not([hidden])');
  const tip = await page.textContent('#flame .tooltip');
  assert.ok(tip.includes(node.name), `tooltip names ${node.name}: ${tip}`);
  assert.ok(tip.includes(`(${pct(node.total, total)})`), `tooltip total share ${pct(node.total, total)}: ${tip}`);
  assert.ok(tip.includes(`(${pct(node.self, total)})`), `tooltip self share ${pct(node.self, total)}: ${tip}`);
  const raw = await page.evaluate(() => window.__unhex.lastTooltip);
  assert.equal(raw.total, node.total);
  assert.equal(raw.self, node.self);
  assert.ok(Math.abs(raw.totalPct - (node.total / total) * 100) < 1e-9, `total % ${raw.totalPct}`);
  assert.ok(Math.abs(raw.selfPct - (node.self / total) * 100) < 1e-9, `self % ${raw.selfPct}`);

  await page.mouse.click(box.x + cx, box.y + cy);
  assert.equal(await page.evaluate(() => window.__unhex.focusedName), node.name);
  // long names are shortened in the crumb; its title carries the full name
  assert.equal(await page.getAttribute('#crumbs .crumb.cur', 'title'), node.name,
    'breadcrumbs show the focused frame');
  // focused: the node now spans the whole width, so its left edge is under x=3
  await page.mouse.move(box.x + 3, box.y + cy);
  assert.equal((await page.evaluate(() => window.__unhex.lastTooltip)).name, node.name);
  await page.screenshot({ path: path.join(SHOTS, 'focus.png') });

  // the URL reproduces the view
  const url = page.url();
  assert.match(url, /focus=/);
  const p2 = await ctx.newPage();
  await p2.goto(url);
  await waitReady(p2);
  assert.equal(await p2.evaluate(() => window.__unhex.focusedName), node.name);
  // breadcrumb back to the root
  await p2.click('#crumbs .crumb >> nth=0');
  assert.equal(await p2.evaluate(() => window.__unhex.focusedName), 'total');
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('explore: search highlights matches and shows their share', T, async () => {
  const { ctx, page, problems, renderResp } = await open();
  await waitReady(page);
  const j = await (await renderResp).json();
  const levels = decode(j.flamebearer, false);
  const total = levels[0][0].total;
  const node = widest(levels, 2) || widest(levels, 1);
  const term = node.name.slice(0, Math.min(node.name.length, 12));
  await page.click('#layout button[data-v="flame"]');
  await page.fill('#search', term);
  await page.waitForFunction(() => window.__unhex.searchInfo && window.__unhex.searchInfo.count > 0);
  const info = await page.evaluate(() => window.__unhex.searchInfo);
  let count = 0;
  for (const l of levels.slice(1)) for (const nd of l) if (nd.name.toLowerCase().includes(term.toLowerCase())) count++;
  assert.equal(info.count, count, 'matching frames counted');
  assert.ok((await page.textContent('#search-info')).includes('% of total'));
  // a matching bar keeps a colour, a non-matching one is muted grey
  const box = await canvasBox(page, '#flame canvas');
  const scale = box.width / total;
  const lvl = levels.findIndex((l) => l.includes(node));
  const [r, g, b] = await pixel(page, '#flame canvas', (node.x + node.total / 2) * scale, lvl * ROW + 3);
  assert.ok(!(Math.abs(r - g) < 12 && Math.abs(g - b) < 12), `matched bar is coloured, got ${r},${g},${b}`);
  const other = levels[lvl].find((nd) => !nd.name.toLowerCase().includes(term.toLowerCase()) && nd.total * scale > 6);
  if (other) {
    const [r2, g2, b2] = await pixel(page, '#flame canvas', (other.x + other.total / 2) * scale, lvl * ROW + 3);
    assert.ok(Math.abs(r2 - g2) < 12 && Math.abs(g2 - b2) < 12, `non-matching bar is muted, got ${r2},${g2},${b2}`);
  }
  assert.match(page.url(), /search=/);
  await page.screenshot({ path: path.join(SHOTS, 'search.png') });
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('top table sorts, and a row opens the sandwich view', T, async () => {
  const { ctx, page, problems, renderResp } = await open();
  await waitReady(page);
  const j = await (await renderResp).json();
  const levels = decode(j.flamebearer, false);
  // independent self per function
  const self = new Map();
  for (const l of levels.slice(1)) for (const nd of l) self.set(nd.name, (self.get(nd.name) || 0) + nd.self);
  const top = [...self].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0];
  assert.equal(await page.getAttribute('#top-table tbody tr >> nth=0', 'data-name'), top[0], 'sorted by self by default');
  await page.click('#top-table th[data-k="total"]');
  const first = await page.getAttribute('#top-table tbody tr >> nth=0', 'data-name');
  assert.ok(first, 'rows after sorting by total');
  await page.fill('#table-filter', top[0]);
  assert.ok((await page.locator('#top-table tbody tr').count()) >= 1);
  await page.click('#top-table tbody tr >> nth=0');
  await page.waitForSelector('#sandwich:not([hidden])');
  const sw = await page.evaluate(() => window.__unhex.sandwich);
  assert.equal(sw.name, top[0]);
  assert.ok(sw.callers >= 2, 'the callers tree has the function and its callers');
  await page.screenshot({ path: path.join(SHOTS, 'sandwich.png') });
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('time range: a brush on the timeline narrows the query', T, async () => {
  const { ctx, page, problems } = await open();
  await waitReady(page);
  const box = await canvasBox(page, '#timeline');
  const next = page.waitForResponse((r) => r.url().includes('/pyroscope/render?'), { timeout: 20000 });
  await page.mouse.move(box.x + box.width * 0.5, box.y + 20);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.9, box.y + 20, { steps: 4 });
  await page.mouse.up();
  const u = new URL((await next).url());
  const st = await page.evaluate(() => window.__unhex.state());
  assert.match(st.from, /^\d+$/);
  assert.equal(u.searchParams.get('from'), st.from);
  assert.equal(u.searchParams.get('until'), st.until);
  await waitReady(page);
  assert.match(page.url(), new RegExp('from=' + st.from));
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('export: pprof and folded stacks downloads', T, async () => {
  const { ctx, page, problems, renderResp } = await open();
  await waitReady(page);
  const j = await (await renderResp).json();
  const [d1] = await Promise.all([page.waitForEvent('download'), page.click('#dl-pprof')]);
  const gz = fs.readFileSync(await d1.path());
  assert.ok(gz.length > 20 && gz[0] === 0x1f && gz[1] === 0x8b, 'pprof download is gzip');
  const [d2] = await Promise.all([page.waitForEvent('download'), page.click('#dl-folded')]);
  const text = fs.readFileSync(await d2.path(), 'utf8');
  let sum = 0;
  for (const line of text.trim().split('\n')) {
    const m = /^(.+) (\d+)$/.exec(line);
    assert.ok(m, 'folded line: ' + line);
    sum += Number(m[2]);
  }
  assert.equal(sum, decode(j.flamebearer, false)[0][0].total, 'folded stacks add up to the total');
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('diff: two releases, a frame whose cost grew is coloured as slower', T, async () => {
  const { ctx, page, problems } = await open();
  await waitReady(page);
  const diffResp = page.waitForResponse((r) => r.url().includes('/pyroscope/render-diff?'), { timeout: 20000 });
  await page.click('#nav-diff');
  const resp = await diffResp;
  const q = new URL(resp.url()).searchParams;
  assert.match(q.get('leftQuery'), /version="[^"]+"/, 'baseline selects a release');
  assert.match(q.get('rightQuery'), /version="[^"]+"/, 'comparison selects a release');
  assert.notEqual(q.get('leftQuery'), q.get('rightQuery'));
  const j = await resp.json();
  await waitReady(page, 'diffReady');
  const levels = decode(j.flamebearer, true);
  const lT = j.leftTicks ?? j.flamebearer.leftTicks, rT = j.rightTicks ?? j.flamebearer.rightTicks;
  const all = levels[0][0].total;
  const box = await canvasBox(page, '#diff-flame canvas');
  const scale = box.width / all;
  // the visible frame (>= 8 px) whose share of its side's total grew the most
  let best = null, bestLevel = -1, bestGrowth = 0;
  levels.forEach((l, d) => {
    if (d === 0) return;
    for (const nd of l) {
      if (nd.lt === 0 || nd.rt === 0 || nd.total * scale < 8) continue;
      const growth = ((nd.rt / rT - nd.lt / lT) / (nd.lt / lT)) * 100;
      if (growth > bestGrowth) { best = nd; bestLevel = d; bestGrowth = growth; }
    }
  });
  assert.ok(best && bestGrowth > 25, `the two releases differ: some frame's share grew by more than 25 % (best ${bestGrowth.toFixed(1)} %)`);
  const cx = (best.x + best.total / 2) * scale, cy = bestLevel * ROW + 3;
  const [r, g, b] = await pixel(page, '#diff-flame canvas', cx, cy);
  assert.ok(r > g + 30 && r > b + 30, `grown frame ${best.name} is red (slower), got ${r},${g},${b}`);
  await page.mouse.move(box.x + cx, box.y + bestLevel * ROW + ROW / 2);
  const tip = await page.evaluate(() => window.__unhex.lastTooltip);
  assert.equal(tip.name, best.name);
  assert.ok(Math.abs(tip.diffPct - bestGrowth) < 1e-6, `tooltip change ${tip.diffPct} vs ${bestGrowth}`);
  assert.match(tip.text, /slower/);
  assert.match(await page.textContent('#diff-legend'), /red = slower/);
  assert.ok((await page.locator('#diff-regressions tbody tr').count()) > 0, 'regressions listed');
  await page.screenshot({ path: path.join(SHOTS, 'diff.png') });
  // colour-blind palette: the same frame turns to the palette's red, shrinking ones blue
  await page.check('#diff-cb');
  const [r2, g2, b2] = await pixel(page, '#diff-flame canvas', cx, cy);
  assert.ok(r2 > g2 + 30 && r2 > b2 + 30, `colour-blind slower colour, got ${r2},${g2},${b2}`);
  assert.match(await page.textContent('#diff-legend'), /blue = faster/);
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('releases: two releases ranked with confidence; a row opens the diff focused on its function', T, async () => {
  const { ctx, page, problems } = await open('#view=releases');
  await waitReady(page, 'releasesReady');
  const st = await page.evaluate(() => window.__unhex.state());
  assert.equal(st.view, 'releases');
  // The releases, from the server itself.
  const now = Math.floor(Date.now() / 1000);
  const rel = await (await fetch(`${URL0}/api/v1/releases?${new URLSearchParams({ service: st.service, type: st.type, from: String(now - 86400), until: String(now + 60) })}`)).json();
  const names = rel.releases.map((r) => r.name);
  assert.deepEqual(names, ['1.4', '1.5'], 'the workload has releases 1.4 then 1.5');
  assert.equal(await page.locator('#rel-list tbody tr').count(), 2, 'one row per release');
  assert.equal(await page.inputValue('#rel-base'), '1.4');
  assert.equal(await page.inputValue('#rel-cand'), '1.5');
  // The ranked table is the server's report, row for row.
  const rep = await (await fetch(`${URL0}/api/v1/regressions?${new URLSearchParams({ service: st.service, type: st.type, baseline: '1.4', candidate: '1.5', from: String(now - 86400), until: String(now + 60), format: 'json', limit: '30' })}`)).json();
  const flagged = rep.rows.filter((r) => r.flagged && !r.unnamed);
  assert.ok(flagged.length > 0, 'the swapped hot paths of 1.5 are flagged');
  const rows = page.locator('#rel-table tbody tr');
  assert.equal(await rows.count(), rep.rows.length, 'one table row per report row');
  assert.equal(await rows.first().getAttribute('data-function'), rep.rows[0].function, 'ranked as the server ranks');
  const first = flagged[0];
  const row = page.locator(`#rel-table tbody tr[data-function="${first.function.replace(/"/g, '\\"')}"]`);
  const lead = first.self.verdict === 'unchanged' || first.self.verdict === 'below noise floor' ? first.total : first.self;
  assert.match(await row.locator('td').first().textContent(), new RegExp(lead.verdict));
  const conf = lead.confidence >= 0.9999 ? '>99.99%' : (lead.confidence * 100).toFixed(2) + '%';
  assert.equal((await row.locator('td').last().textContent()).trim(), conf, 'confidence as the server computed it');
  assert.match(await page.textContent('#rel-summary'), /regression/);
  await page.screenshot({ path: path.join(SHOTS, 'releases.png') });
  // A click: the diff of the two releases, focused on that function.
  const diffResp = page.waitForResponse((r) => r.url().includes('/pyroscope/render-diff?'), { timeout: 20000 });
  await row.click();
  const q = new URL((await diffResp).url()).searchParams;
  assert.match(q.get('leftQuery'), /version="1\.4"/);
  assert.match(q.get('rightQuery'), /version="1\.5"/);
  await waitReady(page, 'diffReady');
  assert.equal(await page.evaluate(() => window.__unhex.state().view), 'diff');
  assert.equal(await page.evaluate(() => window.__unhex.diffFocusName), first.function, 'the graph is focused on the row\'s function');
  await page.screenshot({ path: path.join(SHOTS, 'releases-diff.png') });
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('symbolization: the banner names a missing build ID, the page lists every build ID', T, async () => {
  const { ctx, page, problems, renderResp } = await open();
  await waitReady(page);
  const rq = new URL((await renderResp).url()).searchParams;
  const st = await (await fetch(`${URL0}/api/v1/symbolization?${new URLSearchParams({ query: rq.get('query'), from: rq.get('from'), until: rq.get('until') })}`)).json();
  assert.ok(Array.isArray(st.buildIds) && st.buildIds.length > 0, 'the server reports build IDs');
  const missing = st.buildIds.find((b) => b.status === 'not_found');
  assert.ok(missing, 'without uploaded debug info some build ID is not found');
  await page.waitForSelector('#banner:not([hidden])');
  const banner = await page.textContent('#banner');
  assert.ok(banner.includes(missing.buildId), `banner names ${missing.buildId}: ${banner}`);
  assert.match(banner, /not found: upload its debug info from CI with unhex upload/);
  assert.match(banner, /% of samples are in frames without names/);
  await page.screenshot({ path: path.join(SHOTS, 'banner.png') });
  await page.click('#nav-symbols');
  await waitReady(page, 'symbolsReady');
  assert.equal(await page.locator('#symbols-table tbody tr').count(), st.buildIds.length, 'one row per build ID');
  assert.equal(await page.locator(`#symbols-table tr[data-build-id="${missing.buildId}"] .tag`).textContent(), 'not found');
  await page.screenshot({ path: path.join(SHOTS, 'build-ids.png') });
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('symbolization: the banner says the unwinder is broken, before the symbols', T, async () => {
  const { ctx, page, problems, renderResp } = await open();
  await waitReady(page);
  const rq = new URL((await renderResp).url()).searchParams;
  const st = await (await fetch(`${URL0}/api/v1/symbolization?${new URLSearchParams({ query: rq.get('query'), from: rq.get('from'), until: rq.get('until') })}`)).json();
  const broken = (st.unwinding || []).filter((u) => u.verdict !== 'ok');
  // The workload's stacks start at named functions that are no entry point.
  assert.ok(broken.some((u) => u.verdict === 'truncated'), `the server calls some binary truncated: ${JSON.stringify(st.unwinding)}`);
  await page.waitForSelector('#banner-unwinding');
  const text = await page.textContent('#banner-unwinding');
  assert.match(text, /Stacks look broken: fix the unwinder first/);
  for (const u of broken) {
    const li = page.locator(`#banner-unwinding li[data-build-id="${u.buildId}"][data-verdict="${u.verdict}"]`);
    assert.equal(await li.count(), 1, `one line for ${u.binary} ${u.buildId}`);
    const line = await li.textContent();
    assert.ok(line.startsWith(`${u.binary} (build ${u.buildId.slice(0, 12)}):`), line);
    assert.ok(line.includes('fix: ' + u.fix), `the server's fix for ${u.binary}: ${line}`);
    if (u.verdict === 'truncated') assert.match(line, /: [0-9.]+% of its stacks are cut short \(they stop before an entry point/);
  }
  // First the unwinder, then what lacks names (libssl has no debug info).
  const order = await page.evaluate(() => [...document.querySelector('#banner').children].map((c) => c.id));
  assert.deepEqual(order.slice(0, 2), ['banner-unwinding', 'banner-symbols']);
  await page.screenshot({ path: path.join(SHOTS, 'banner-unwinding.png') });
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('renderer: first render of a 16,000-node flame graph (measured, not asserted)', T, async () => {
  const { ctx, page, problems } = await open();
  await waitReady(page);
  await page.click('#layout button[data-v="flame"]');
  const tree = makeTree(7, 16000, { unnamed: true });
  const nodes = countNodes(tree);
  const fb = toFlamebearer(tree, 'samples');
  const runs = [];
  for (let k = 0; k < 5; k++) runs.push(await page.evaluate((j) => window.__unhex.loadFlamebearer(j), fb));
  assert.equal(runs[0].nodes, nodes);
  const med = runs.map((r) => r.renderMs).sort((a, b) => a - b)[2];
  const line = `# 16k-node flame graph (${nodes} nodes, ${await page.evaluate(() => document.querySelector('#flame canvas').clientWidth)} px): ` +
    `first render ${runs[0].renderMs.toFixed(1)} ms (+ decode ${runs[0].decodeMs.toFixed(1)} ms), median of 5 ${med.toFixed(1)} ms`;
  console.log(line);
  assert.deepEqual(problems, []);
  await ctx.close();
});
