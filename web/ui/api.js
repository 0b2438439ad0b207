// api.js - the HTTP calls of the UI (same origin as the page).
//
// Render endpoints take Unix seconds; Connect (querier.v1) bodies take
// milliseconds, as in Pyroscope.  Every call throws Error with the server's
// message on a non-2xx answer, so views can show it.

async function check(res, what) {
  if (res.ok) return res;
  let msg = '';
  try { msg = await res.text(); } catch (_) { /* body unreadable */ }
  try { const j = JSON.parse(msg); if (j && j.message) msg = j.message; } catch (_) { /* plain text */ }
  throw new Error(`${what}: HTTP ${res.status}${msg ? ': ' + msg.slice(0, 300) : ''}`);
}

async function connect(method, body) {
  const res = await fetch('/querier.v1.QuerierService/' + method, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  await check(res, method);
  return res.json();
}

export async function profileTypes(startMs, endMs) {
  const j = await connect('ProfileTypes', { start: startMs, end: endMs });
  return j.profileTypes || [];
}

export async function labelNames(matchers, startMs, endMs) {
  const j = await connect('LabelNames', { matchers, start: startMs, end: endMs });
  return j.names || [];
}

export async function labelValues(name, matchers, startMs, endMs) {
  const j = await connect('LabelValues', { name, matchers, start: startMs, end: endMs });
  return j.names || [];
}

export async function selectSeries(profileTypeID, labelSelector, startMs, endMs, step) {
  const j = await connect('SelectSeries', { profileTypeID, labelSelector, start: startMs, end: endMs, step, groupBy: [] });
  return j.series || [];
}

export function renderURL(query, from, until, maxNodes) {
  const p = new URLSearchParams({ query, from: String(from), until: String(until), format: 'json' });
  if (maxNodes) p.set('maxNodes', String(maxNodes));
  return '/pyroscope/render?' + p;
}

export async function render(query, from, until, maxNodes) {
  const res = await fetch(renderURL(query, from, until, maxNodes));
  await check(res, 'render');
  return res.json();
}

export async function renderDiff(left, right, maxNodes) {
  const p = new URLSearchParams({
    leftQuery: left.query, leftFrom: String(left.from), leftUntil: String(left.until),
    rightQuery: right.query, rightFrom: String(right.from), rightUntil: String(right.until), format: 'json',
  });
  if (maxNodes) p.set('maxNodes', String(maxNodes));
  const res = await fetch('/pyroscope/render-diff?' + p);
  await check(res, 'render-diff');
  return res.json();
}

export function pprofURL(query, from, until) {
  return '/api/v1/pprof?' + new URLSearchParams({ query, from: String(from), until: String(until) });
}

export async function symbolization(query, from, until) {
  const p = new URLSearchParams({ from: String(from), until: String(until) });
  if (query) p.set('query', query);
  const res = await fetch('/api/v1/symbolization?' + p);
  await check(res, 'symbolization');
  return res.json();
}

export async function releases(service, type, from, until) {
  const p = new URLSearchParams({ service, from: String(from), until: String(until) });
  if (type) p.set('type', type);
  const res = await fetch('/api/v1/releases?' + p);
  await check(res, 'releases');
  return res.json();
}

// The regression report between two releases of a service (JSON, every flagged row and `limit` more).
export async function regressions(service, type, baseline, candidate, from, until, limit) {
  const p = new URLSearchParams({ service, baseline, candidate, from: String(from), until: String(until), format: 'json', limit: String(limit) });
  if (type) p.set('type', type);
  const res = await fetch('/api/v1/regressions?' + p);
  await check(res, 'regressions');
  return res.json();
}
