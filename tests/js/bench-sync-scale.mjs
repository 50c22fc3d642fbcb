// Sync at scale (run by scripts/bench-sync-scale.sh, not part of npm test): one namespace of
// 100,000 workflows and 2,000,000 events on PostgreSQL (times --scale), then
//   (a) the first sync of a new profile: the server's pull answers alone, then the package's
//       store (runstore/core in Node, on memory) syncing the whole namespace in one pass, beside
//       the same reads as plain SQL on the same database (examples/sync_scale_sql.rs);
//   (b) steady state: 8 writers pushing one event at a time and 64 readers long-polling the
//       namespace's changes with their events, spread over 3 server processes on the one
//       database: push latency, the time until a push reached every reader, the servers' RSS;
//   (c) the push rate: 32 clients over the 3 server processes, each pushing one event at a time
//       to a workflow of its own in the one namespace, with no pause, for --push-seconds.
//
// Seeding: one template workflow of 20 events is pushed through the server's push route (in 4
// pushes of 5 events), then its rows in the server's own tables (events, workflows, sync_feed)
// are copied for every workflow by multi-row INSERT ... SELECT in one transaction, the feed
// entries interleaved as 4 rounds over all workflows, as pushes would have left them.
//
// Environment: RUNSTORE_SYNC_BIN (release build), RUNSTORE_PG_URL, PSQL, SQL_BASELINE_BIN.
// Options: --scale (1.0), --seconds (steady state, 30), --pause-ms (a writer's pause between
// pushes, 50), --push-seconds ((c), 10), --skip-store (no store sync in (a)).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg, cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { syncStore } from '../../js/sync.js';
import { openMemoryStore } from './node-store.mjs';
import { freePort, startSyncServer, syncServerSettings } from './sync-server.mjs';

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '1.0' },
    seconds: { type: 'string', default: '30' },
    'pause-ms': { type: 'string', default: '50' },
    'push-seconds': { type: 'string', default: '10' },
    'skip-store': { type: 'boolean', default: false },
  },
});
const SCALE = Number(args.scale);
const WORKFLOWS = Math.max(8, Math.round(100_000 * SCALE));
const EVENTS_PER_WORKFLOW = 20;
const ROUNDS = 4;
const PER_PUSH = EVENTS_PER_WORKFLOW / ROUNDS;
const EVENTS = WORKFLOWS * EVENTS_PER_WORKFLOW;
const WRITERS = 8;
const READERS = 64;
const SERVERS = 3;
const SECONDS = Number(args.seconds);
const PAUSE_MS = Number(args['pause-ms']);
const PUSH_CLIENTS = 32;
const PUSH_SECONDS = Number(args['push-seconds']);
const TOKEN = 'token-bench';
const NS = 'scale';
const SCHEMA = 'bench_scale';

const now = () => performance.timeOrigin + performance.now();
const log = (line) => console.log(`# ${line}`);
const id = (n) => `wf-${String(n).padStart(7, '0')}`;
const mb = (bytes) => bytes / 1e6;
const pct = (sorted, p) => sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
const fixed = (x, digits = 1) => Number.isFinite(x) ? x.toFixed(digits) : 'n/a';

function psql(sql) {
  // On stdin, not -c: each statement its own transaction unless the SQL says BEGIN.
  return execFileSync(process.env.PSQL, ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', process.env.RUNSTORE_PG_URL, '-f', '-'], { input: sql, encoding: 'utf8', maxBuffer: 1 << 26 }).trim();
}

function rssMb(pid) {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
    return Number(line.split(/\s+/)[1]) / 1024;
  } catch {
    return NaN;
  }
}

async function call(url, path, init = {}) {
  const response = await fetch(`${url}/v1/namespaces/${NS}/${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${text}`);
  return { body: JSON.parse(text), bytes: Buffer.byteLength(text) };
}

function event(n) {
  // About 200 bytes stored, the size of a step's result in the other benchmarks.
  return { type: 'custom', name: 'step', recordedAt: 1_700_000_000_000 + n, data: { n, note: 'x'.repeat(120) } };
}

async function seed(settings) {
  const server = await startSyncServer(settings);
  let head = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    const events = Array.from({ length: PER_PUSH }, (_, k) => event(head + k + 1));
    const { body } = await call(settings.url, 'push', { method: 'POST', body: JSON.stringify({ requestId: `template-${round}`, workflowId: 'template', expectedHead: head, events }) });
    head = body.head;
  }
  await server.stop();
  const template = `${NS}/w/template`;
  const wid = `'${NS}/w/' || 'wf-' || lpad(i::text, 7, '0')`;
  const started = Date.now();
  psql(`SET search_path TO ${SCHEMA};
    BEGIN;
    CREATE TEMP TABLE t AS SELECT position, base, head FROM sync_feed WHERE feed = '${NS}';
    DELETE FROM sync_feed WHERE feed = '${NS}';
    INSERT INTO events (workflow_id, seq, kind, recorded_at, event)
      SELECT ${wid}, e.seq, e.kind, e.recorded_at, e.event
      FROM generate_series(1, ${WORKFLOWS}) AS i
      CROSS JOIN LATERAL (SELECT * FROM events WHERE workflow_id = '${template}' ORDER BY seq) AS e;
    INSERT INTO workflows (workflow_id, head, status, workflow_type, run_id, started_at, closed_at, updated_at, changed)
      SELECT ${wid}, w.head, w.status, w.workflow_type, w.run_id, w.started_at, w.closed_at, w.updated_at, w.changed
      FROM generate_series(1, ${WORKFLOWS}) AS i CROSS JOIN (SELECT * FROM workflows WHERE workflow_id = '${template}') AS w;
    INSERT INTO sync_feed (feed, position, workflow_id, base, head)
      SELECT '${NS}', (t.position - 1) * ${WORKFLOWS} + i, ${wid}, t.base, t.head
      FROM t CROSS JOIN generate_series(1, ${WORKFLOWS}) AS i ORDER BY 2;
    UPDATE sync_feed_heads SET position = ${ROUNDS * WORKFLOWS} WHERE feed = '${NS}';
    DELETE FROM events WHERE workflow_id = '${template}';
    DELETE FROM workflows WHERE workflow_id = '${template}';
    COMMIT;`);
  const inserted = Date.now() - started;
  psql(`SET search_path TO ${SCHEMA}; VACUUM ANALYZE events; VACUUM ANALYZE workflows; VACUUM ANALYZE sync_feed;`);
  const [events, bytes] = psql(`SET search_path TO ${SCHEMA}; SELECT count(*), sum(octet_length(event)) FROM events`).split('|').map(Number);
  if (events !== EVENTS) throw new Error(`seeded ${events} events, not ${EVENTS}`);
  const size = psql(`SELECT pg_size_pretty(pg_database_size(current_database()))`);
  log(`seeded ${WORKFLOWS} workflows, ${events} events (${fixed(mb(bytes))} MB of stored events), ${ROUNDS * WORKFLOWS} feed entries: insert ${inserted} ms, vacuum analyze ${Date.now() - started - inserted} ms; database ${size}`);
  return { bytes };
}

/** (a) The server's pull answers alone: every page of the feed with its events, parsed. */
async function pullOnly(url) {
  const started = now();
  let cursor = 0;
  let events = 0;
  let bytes = 0;
  let pages = 0;
  for (;;) {
    const { body, bytes: size } = await call(url, `changes?after=${cursor}&limit=500&events=true`);
    for (const segment of body.segments) events += segment.events.length;
    bytes += size;
    pages += 1;
    cursor = body.cursor;
    if (!body.more) break;
  }
  if (events !== EVENTS) throw new Error(`pulled ${events} events, not ${EVENTS}`);
  return { events, bytes, pages, ms: now() - started };
}

/** (a) A new profile's first sync: the package's store pulls the whole namespace. */
async function firstSync(url) {
  const store = await openMemoryStore('bench-scale');
  let bytes = 0;
  const plain = globalThis.fetch;
  globalThis.fetch = async (...request) => {
    const response = await plain(...request);
    bytes += Number(response.headers.get('content-length') ?? 0);
    return response;
  };
  const started = now();
  let summary;
  try {
    summary = await syncStore(store, { url, token: TOKEN, namespace: NS });
  } finally {
    globalThis.fetch = plain;
  }
  const ms = now() - started;
  if (summary.pulled.events !== EVENTS || summary.pulled.workflows !== WORKFLOWS) throw new Error(`first sync pulled ${JSON.stringify(summary.pulled)}`);
  const sample = store.readHistory(id(WORKFLOWS), { limit: 100 }).items;
  if (sample.length !== EVENTS_PER_WORKFLOW || store.head(id(WORKFLOWS)) !== EVENTS_PER_WORKFLOW) throw new Error(`workflow ${id(WORKFLOWS)} has ${sample.length} events here`);
  await store.close();
  return { events: summary.pulled.events, bytes, ms, heapMb: process.memoryUsage().rss / 1e6 };
}

/** (b) 8 writers and 64 long-polling readers on 3 servers for SECONDS. */
async function steady(servers) {
  const startCursor = ROUNDS * WORKFLOWS;
  const pushes = new Map(); // `${workflowId}@${head}` → { sent, answered, reached: [] }
  const latencies = [];
  let stop = false;
  const aborts = [];
  let readerErrors = 0;
  let answers = 0;

  const readers = Array.from({ length: READERS }, async (_, r) => {
    const { url } = servers[r % SERVERS].settings;
    let cursor = startCursor;
    const abort = new AbortController();
    aborts.push(abort);
    while (!abort.signal.aborted) {
      try {
        const response = await fetch(`${url}/v1/namespaces/${NS}/changes?after=${cursor}&limit=500&events=true&waitMs=25000`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: abort.signal });
        const body = await response.json();
        const at = now();
        answers += 1;
        if (response.status !== 200) throw new Error(JSON.stringify(body));
        for (const segment of body.segments) {
          const push = pushes.get(`${segment.workflowId}@${segment.head}`);
          if (push) push.reached.push(at);
        }
        cursor = body.cursor;
      } catch (error) {
        if (abort.signal.aborted) break;
        readerErrors += 1;
        if (readerErrors < 5) console.error(`reader ${r}: ${error.message}`);
      }
    }
  });

  // Give the readers time to be waiting before the first push.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const started = now();
  const writers = Array.from({ length: WRITERS }, async (_, w) => {
    const { url } = servers[w % SERVERS].settings;
    const heads = new Map();
    let k = 0;
    while (!stop) {
      // Each writer writes to its own workflows (n ≡ w mod 8), so no push conflicts.
      const n = 1 + w + WRITERS * Math.floor(Math.random() * Math.floor(WORKFLOWS / WRITERS));
      const workflowId = id(n);
      const head = heads.get(workflowId) ?? EVENTS_PER_WORKFLOW;
      const entry = { sent: now(), answered: 0, reached: [] };
      pushes.set(`${workflowId}@${head + 1}`, entry);
      const { body } = await call(url, 'push', { method: 'POST', body: JSON.stringify({ requestId: `steady-${w}-${k++}`, workflowId, expectedHead: head, events: [event(head + 1)] }) });
      entry.answered = now();
      latencies.push(entry.answered - entry.sent);
      heads.set(workflowId, body.head);
      if (PAUSE_MS > 0) await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    }
  });

  const rss = servers.map(() => []);
  const sampler = setInterval(() => servers.forEach((s, i) => rss[i].push(rssMb(s.process.pid))), 500);
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  stop = true;
  await Promise.all(writers);
  const elapsed = now() - started;
  // Let the readers catch up with the last pushes, then end their waits.
  const deadline = now() + 30_000;
  while (now() < deadline && [...pushes.values()].some((p) => p.reached.length < READERS)) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  clearInterval(sampler);
  for (const abort of aborts) abort.abort();
  await Promise.all(readers);

  const all = [...pushes.values()];
  const complete = all.filter((p) => p.reached.length >= READERS);
  const reachAll = complete.map((p) => Math.max(...p.reached) - p.sent).sort((a, b) => a - b);
  const reachEach = all.flatMap((p) => p.reached.map((t) => t - p.sent)).sort((a, b) => a - b);
  latencies.sort((a, b) => a - b);
  return {
    pushes: all.length,
    pushesPerSecond: all.length / (elapsed / 1000),
    incomplete: all.length - complete.length,
    readerErrors,
    answers,
    push: { p50: pct(latencies, 0.5), p95: pct(latencies, 0.95), max: latencies.at(-1) },
    reachAll: { p50: pct(reachAll, 0.5), p95: pct(reachAll, 0.95), max: reachAll.at(-1) },
    reachEach: { p50: pct(reachEach, 0.5), p95: pct(reachEach, 0.95) },
    rssPeakMb: rss.map((samples) => Math.max(...samples)),
  };
}

/** (c) PUSH_CLIENTS clients pushing as fast as they are answered, over the 3 servers. */
async function pushRate(servers) {
  let stop = false;
  const latencies = [];
  const clients = Array.from({ length: PUSH_CLIENTS }, async (_, c) => {
    const { url } = servers[c % SERVERS].settings;
    const workflowId = `rate-${c}`;
    let head = 0;
    while (!stop) {
      const sent = now();
      const { body } = await call(url, 'push', { method: 'POST', body: JSON.stringify({ requestId: `rate-${c}-${head}`, workflowId, expectedHead: head, events: [event(head + 1)] }) });
      latencies.push(now() - sent);
      head = body.head;
    }
  });
  const started = now();
  await new Promise((resolve) => setTimeout(resolve, PUSH_SECONDS * 1000));
  stop = true;
  await Promise.all(clients);
  const elapsed = now() - started;
  latencies.sort((a, b) => a - b);
  return { pushes: latencies.length, perSecond: latencies.length / (elapsed / 1000), p50: pct(latencies, 0.5), p95: pct(latencies, 0.95) };
}

function sqlBaseline() {
  const out = execFileSync(process.env.SQL_BASELINE_BIN, [], { encoding: 'utf8', env: { ...process.env, SCHEMA, NAMESPACE: NS, PAGE: '500' } });
  const ways = Object.fromEntries(out.trim().split('\n').map((line) => JSON.parse(line)).map((r) => [r.way, r]));
  for (const way of Object.values(ways)) if (way.events !== EVENTS) throw new Error(`SQL ${way.way} read ${way.events} events, not ${EVENTS}`);
  return ways;
}

async function main() {
  log(`scale ${SCALE}: ${WORKFLOWS} workflows, ${EVENTS} events; ${cpus().length} cores, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const grants = { [TOKEN]: [NS] };
  const ports = [];
  for (let i = 0; i < SERVERS; i += 1) ports.push(await freePort());
  const settings = ports.map((port) => syncServerSettings(port, grants, SCHEMA));
  const { bytes: stored } = await seed(settings[0]);

  const servers = [];
  for (const s of settings) servers.push({ settings: s, ...(await startSyncServer(s)) });
  const stopAll = () => Promise.all(servers.map((s) => s.stop()));
  try {
    const url = settings[0].url;
    const rssBefore = rssMb(servers[0].process.pid);
    const sql = sqlBaseline();
    const pull = await pullOnly(url);
    const rssAfterPull = rssMb(servers[0].process.pid);
    const store = args['skip-store'] ? null : await firstSync(url);
    log(`load average after (a): ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

    // MB/s on one basis for every reader: the stored events' bytes; the server's also on the wire.
    const row = (name, r, wire) => `| ${name} | ${fixed(r.ms / 1000, 2)} | ${Math.round(r.events / (r.ms / 1000)).toLocaleString('en')} | ${fixed(mb(stored) / (r.ms / 1000))} | ${wire ? fixed(mb(r.bytes) / (r.ms / 1000)) : ''} | ${fixed(r.ms / sql.feed.ms, 2)} |`;
    console.log('\n(a) first sync of the whole namespace\n');
    console.log('| reader | s | events/s | stored MB/s | HTTP MB/s | time ÷ SQL feed pages |');
    console.log('|---|---:|---:|---:|---:|---:|');
    console.log(row('plain SQL, feed pages of 500 entries with their events', sql.feed));
    console.log(row('plain SQL, events in key order, 10,000 a page', sql.keyset));
    console.log(row('server pull answers (HTTP + JSON parse, no store)', pull, true));
    if (store) console.log(row('first sync into the package\'s store (memory)', store, true));
    console.log(`\nstored MB: the ${fixed(mb(stored))} MB of stored events over the time; HTTP MB: the answers' bodies. Server 1 RSS ${fixed(rssBefore)} MB before, ${fixed(rssAfterPull)} MB after the pulls; ${pull.pages} pull pages${store ? `; Node RSS after the store's sync ${fixed(store.heapMb)} MB` : ''}.`);

    const s = await steady(servers);
    console.log(`\n(b) steady state: ${WRITERS} writers, ${READERS} long-polling readers, ${SERVERS} servers, ${SECONDS} s, writer pause ${PAUSE_MS} ms\n`);
    console.log(`pushes ${s.pushes} (${fixed(s.pushesPerSecond)}/s); reader answers ${s.answers}; reader errors ${s.readerErrors}; pushes not seen by every reader ${s.incomplete}`);
    console.log('| figure | p50 ms | p95 ms | max ms |');
    console.log('|---|---:|---:|---:|');
    console.log(`| push latency | ${fixed(s.push.p50)} | ${fixed(s.push.p95)} | ${fixed(s.push.max)} |`);
    console.log(`| push sent → every reader has it | ${fixed(s.reachAll.p50)} | ${fixed(s.reachAll.p95)} | ${fixed(s.reachAll.max)} |`);
    console.log(`| push sent → one reader has it | ${fixed(s.reachEach.p50)} | ${fixed(s.reachEach.p95)} | |`);
    console.log(`server RSS peak during (b): ${s.rssPeakMb.map((x) => `${fixed(x)} MB`).join(', ')}`);

    const rate = await pushRate(servers);
    console.log(`\n(c) push rate: ${PUSH_CLIENTS} clients over ${SERVERS} servers, one namespace, no pause, ${PUSH_SECONDS} s\n`);
    console.log(`pushes ${rate.pushes}: ${fixed(rate.perSecond)}/s; latency p50 ${fixed(rate.p50)} ms, p95 ${fixed(rate.p95)} ms`);
    log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  } finally {
    await stopAll();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
