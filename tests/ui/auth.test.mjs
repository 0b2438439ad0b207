// auth.test.mjs - the UI behind authentication, in headless Chromium against
// the REAL server started by tests/ui/run.sh with a token file:
//   UNHEX_AUTH_URL     https?://127.0.0.1:PORT of that server (required)
//   UNHEX_AUTH_TENANT  the tenant of the profiles (the Basic user)
//   UNHEX_AUTH_TOKEN   a token with the query scope for that tenant
//   UNHEX_OTHER_TOKEN  a token bound to another tenant
//   CHROMIUM           browser binary (default /usr/bin/chromium)
//
// A browser user authenticates with the browser's own Basic prompt: the
// tenant as user name, the token as password (docs/security.md).  Chromium
// answers the server's challenge with the credentials of its context
// (playwright's httpCredentials stand for what a user types), then sends
// them with every request of the page, so the UI itself knows nothing of
// tokens.  Checked: without credentials the page is a 401 with a Basic
// challenge; with them the explore view renders real data and every API call
// it made carried them; a wrong token is refused; another tenant's token
// cannot show this tenant's data.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium } from './fixtures/browser.mjs';

const URL0 = process.env.UNHEX_AUTH_URL;
const TENANT = process.env.UNHEX_AUTH_TENANT;
const TOKEN = process.env.UNHEX_AUTH_TOKEN;
const OTHER = process.env.UNHEX_OTHER_TOKEN;
const T = { timeout: 45000 };

let browser;

before(async () => {
  assert.ok(URL0 && TENANT && TOKEN && OTHER, 'tests/ui/run.sh sets UNHEX_AUTH_URL, _TENANT, _TOKEN and UNHEX_OTHER_TOKEN');
  browser = await launchChromium();
});

after(async () => { await browser?.close(); });

async function context(credentials) {
  const opts = { viewport: { width: 1400, height: 1000 } };
  if (credentials) opts.httpCredentials = credentials;
  return browser.newContext(opts);
}

test('auth: without credentials the page is a 401 with a Basic challenge', T, async () => {
  const ctx = await context(null);
  // What the browser receives: a 401 that asks for Basic credentials ...
  const r = await ctx.request.get(URL0 + '/');
  assert.equal(r.status(), 401);
  assert.match(r.headers()['www-authenticate'] || '', /^Basic realm="unhex"/);
  assert.ok(!(await r.text()).includes('<script'), 'no UI without credentials');
  // ... so Chromium asks for them; headless, with none to give, it gives up.
  const page = await ctx.newPage();
  await assert.rejects(page.goto(URL0 + '/'), /ERR_INVALID_AUTH_CREDENTIALS/);
  await ctx.close();
});

test('auth: tenant and token as Basic credentials show the explore view', T, async () => {
  const ctx = await context({ username: TENANT, password: TOKEN });
  const page = await ctx.newPage();
  const problems = [], api = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('pageerror', (e) => problems.push('pageerror: ' + e));
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/pyroscope/') || u.pathname.startsWith('/querier.') ||
        u.pathname.startsWith('/api/')) api.push(r);
  });
  const resp = await page.goto(URL0 + '/');
  assert.equal(resp.status(), 200);
  await page.waitForFunction(() => window.__unhex && window.__unhex.ready === true, null, { timeout: 30000 });
  assert.deepEqual(await page.evaluate(() => window.__unhex.errors), [], 'the page showed an error');
  assert.ok(await page.evaluate(() => window.__unhex.model.n) > 100, 'real profiles give a real tree');
  assert.ok(api.length >= 2, 'the page called the API');
  const basic = 'Basic ' + Buffer.from(`${TENANT}:${TOKEN}`).toString('base64');
  for (const r of api) {
    const h = await r.allHeaders();
    assert.equal(h.authorization, basic, `${r.url()} carried the credentials`);
    const res = await r.response();
    assert.ok(res && res.status() < 400, `${r.url()}: HTTP ${res && res.status()}`);
  }
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('auth: a wrong token is refused', T, async () => {
  const ctx = await context({ username: TENANT, password: 'uhx_wrong' });
  const page = await ctx.newPage();
  const resp = await page.goto(URL0 + '/');
  assert.equal(resp.status(), 401);
  await ctx.close();
});

test("auth: another tenant's token cannot show this tenant's data", T, async () => {
  const ctx = await context({ username: TENANT, password: OTHER });
  const page = await ctx.newPage();
  const resp = await page.goto(URL0 + '/');
  assert.equal(resp.status(), 403);
  // Its own tenant (the token's, no Basic user) sees no profiles of this one.
  const r = await ctx.request.get(URL0 + '/api/v1/stats', {
    headers: { authorization: 'Bearer ' + OTHER },
  });
  assert.equal(r.status(), 200);
  const stats = await r.json();
  assert.notEqual(stats.tenant, TENANT);
  assert.equal(stats.profiles, 0);
  await ctx.close();
});
