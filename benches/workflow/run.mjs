// The runstore/workflow benchmark (scripts/bench-workflow.sh builds the page and starts the
// PostgreSQL cluster first): workflows of ten small steps, one at a time and 8 at once, through
// the engine and through the same steps as store commits written by hand, on the same store, in
// Node (memory) and in a headless Chromium page (OPFS); beside them, in the same run, the same
// journal and ledger as hand-written SQL on better-sqlite3 and on the official SQLite wasm build,
// DBOS Transact on PostgreSQL and durably on its SQLite file. Then the replay of runs of 1,000
// and 10,000 steps after an engine restart, in Node and in Chromium. Prints Markdown tables:
// medians of the runs with their spreads, ratios taken within each run. Figures only, no
// assertions on speed.
//
// Usage: node --expose-gc benches/workflow/run.mjs [--runs 5] [--workflows 32]
//          [--replay 1000,10000] [--replay-runs 3] [--groups node,durable,chromium,replay] [--json FILE]
//        node benches/workflow/run.mjs --from FILE   (the tables of a run saved with --json)
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { RunStore } from 'runstore';
import { init, RunStoreCore } from 'runstore/core';
import { CHROMIUM_ARGS, launchChromium, serveStatic } from '../../tests/js/browser.mjs';
import { engineSide, handSide, measure, measureReplay, STEPS } from './src/workload.js';
import { betterSqlite, dbos, durably, shutdownDbos, sqliteVersion } from './node-sides.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const LANES = [1, 8];
const GROUPS = ['node', 'durable', 'chromium', 'replay'];

function options() {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '5' },
      workflows: { type: 'string', default: '32' },
      replay: { type: 'string', default: '1000,10000' },
      'replay-runs': { type: 'string', default: '3' },
      groups: { type: 'string', default: GROUPS.join(',') },
      json: { type: 'string' },
      from: { type: 'string' },
    },
  });
  const groups = values.groups.split(',');
  for (const group of groups) if (!GROUPS.includes(group)) throw new Error(`unknown group ${group}; known: ${GROUPS.join(', ')}`);
  return {
    runs: Number(values.runs),
    workflows: Number(values.workflows),
    replay: values.replay ? values.replay.split(',').map(Number) : [],
    replayRuns: Number(values['replay-runs']),
    groups,
    json: values.json,
    from: values.from,
  };
}

// ----- the sides -----

/** runstore in Node, on memory: `engine` or `hand` on RunStoreCore or on the RunStore client (in the process). */
function runstoreNode(makeSide, client) {
  return async ({ name }) => {
    const store = client ? await RunStore.open(name, { persistence: 'memory' }) : await RunStoreCore.open(name, { persistence: 'memory' });
    const side = await makeSide(store);
    return { runOne: side.runOne, close: async () => (await side.close(), await store.close()) };
  };
}

/** The cluster scripts/pg-cluster.sh started: its libpq keywords (host=<socket dir> port=... user=... dbname=...). */
function pgFields() {
  const fields = Object.fromEntries((process.env.RUNSTORE_PG_URL ?? '').split(' ').map((kv) => kv.split('=')));
  if (!fields.host) throw new Error('RUNSTORE_PG_URL is not set: run scripts/bench-workflow.sh, which starts a PostgreSQL cluster');
  return fields;
}

/** DBOS's system database on that cluster, as a URL (DBOS creates the database). */
function pgUrl() {
  const { user, port, host } = pgFields();
  return `postgresql://${user}@localhost:${port}/runstore_bench_dbos?host=${encodeURIComponent(host)}`;
}

/**
 * Every side: [group, id, title, where it runs, open]. A Node side's `open({ name, lanes })`
 * gives `{ runOne, close }`; a page side is measured by `window.bench.measure` under its id.
 */
const SIDES = [
  ['node', 'engine-core', 'runstore/workflow on RunStoreCore', 'node', runstoreNode(engineSide, false)],
  ['node', 'hand-core', 'hand-written commits on RunStoreCore', 'node', runstoreNode(handSide, false)],
  ['node', 'engine-client', 'runstore/workflow on RunStore (in the process)', 'node', runstoreNode(engineSide, true)],
  ['node', 'hand-client', 'hand-written commits on RunStore (in the process)', 'node', runstoreNode(handSide, true)],
  ['node', 'sqlite-memory', 'hand-written SQL on better-sqlite3 `:memory:`', 'node', () => betterSqlite(false)],
  ['durable', 'dbos', 'DBOS Transact on PostgreSQL', 'node', () => dbos(pgUrl())],
  ['durable', 'durably', 'durably on its SQLite file', 'node', ({ lanes }) => durably({ lanes })],
  ['durable', 'sqlite-file', 'hand-written SQL on better-sqlite3, a file', 'node', () => betterSqlite(true)],
  ['chromium', 'engine-client', 'runstore/workflow on the RunStore client', 'page'],
  ['chromium', 'hand-client', 'hand-written commits on the RunStore client', 'page'],
  ['chromium', 'engine-core', 'runstore/workflow on RunStoreCore in a worker', 'page'],
  ['chromium', 'hand-core', 'hand-written commits on RunStoreCore in a worker', 'page'],
  ['chromium', 'official', 'hand-written SQL on the official build in a worker', 'page'],
].map(([group, id, title, where, open]) => ({ group, id, title, where, open }));

/** The setups each group runs its sides on. */
const SETUPS = { node: ['memory'], durable: ['durable'], chromium: ['full', 'relaxed'] };

async function measureSide(page, side, setup, lanes, count, name) {
  if (side.where === 'page') {
    return page.evaluate((args) => window.bench.measure(...args), [side.id, setup, count, lanes, name]);
  }
  const opened = await side.open({ name, lanes });
  try {
    return await measure(opened.runOne, { count, lanes, prefix: name });
  } finally {
    await opened.close();
  }
}

/** Durable sides beside runstore's: the engine on OPFS `full` in Chromium, measured in the same run. */
const DURABLE_RUNSTORE = [
  ['chromium', 'engine-client', 'full'],
  ['chromium', 'engine-core', 'full'],
];

// ----- the runs -----

async function runAll(opts, page) {
  const results = [];
  const sides = SIDES.filter((side) => opts.groups.includes(side.group));
  let n = 0;
  const once = async (run, side, setup, lanes, count) => {
    const name = `wf-${run}-${side.group}-${side.id}-${setup}-${lanes}-${n++}`;
    const result = await measureSide(page, side, setup, lanes, count, name);
    if (run > 0) {
      results.push({ run, group: side.group, side: side.id, setup, lanes, ...result });
      const perSecond = (result.count / result.ms) * 1000;
      console.error(`[bench] run ${run} ${side.group} ${side.id} ${setup} x${lanes}: ${perSecond.toFixed(1)} workflows/s, ${(result.stepMs * 1000).toFixed(0)} µs a step`);
    }
  };
  // Run 0 warms every side up (its code, the JIT, the database files' first pages), untimed.
  for (let run = 0; run <= opts.runs; run++) {
    for (const group of ['node', 'durable', 'chromium']) {
      const inGroup = sides.filter((side) => side.group === group);
      // Each run starts with another side, so that no side always runs first or last.
      const order = inGroup.map((_, i) => inGroup[(i + run) % inGroup.length]);
      for (const setup of SETUPS[group]) {
        for (const lanes of LANES) {
          for (const side of order) await once(run, side, setup, lanes, run === 0 ? lanes * 2 : opts.workflows);
        }
      }
    }
  }
  return results;
}

/** A full GC (twice: what the first one's finalizers release goes in the second). */
async function gcNode() {
  global.gc();
  await new Promise((resolve) => setImmediate(resolve));
  global.gc();
}

async function runReplays(opts, page) {
  const results = [];
  await init();
  // Run 0 replays a short run on each side untimed, so that the first figure does not pay for compiling the engine.
  for (let run = 0; run <= opts.replayRuns; run++) {
    for (const steps of run === 0 ? [200] : opts.replay) {
      const name = `replay-${run}-${steps}`;
      const store = await RunStoreCore.open(name, { persistence: 'memory' });
      try {
        const result = await measureReplay(store, steps, `${name}-run`, { gc: gcNode, heap: () => process.memoryUsage().heapUsed });
        if (run > 0) results.push({ run, where: 'node', steps, ...result });
        console.error(`[bench] replay ${run} node ${steps} steps: live after ${result.liveMs.toFixed(0)} ms, heap +${(result.heapBytes / 1e6).toFixed(1)} MB`);
      } finally {
        await store.close();
      }
      if (page) {
        const result = await page.evaluate(([n, label]) => window.bench.replay(n, label), [steps, `${name}-page`]);
        if (run > 0) results.push({ run, where: 'chromium', steps, ...result });
        console.error(`[bench] replay ${run} chromium ${steps} steps: live after ${result.liveMs.toFixed(0)} ms, heap +${(result.heapBytes / 1e6).toFixed(1)} MB`);
      }
    }
  }
  return results;
}

// ----- the report -----

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
/** "median (min–max)" over the runs, or the single value of one run. */
function spread(xs, format) {
  if (xs.length === 0) return '–';
  if (xs.length === 1) return format(xs[0]);
  return `${format(median(xs))} (${format(Math.min(...xs))}–${format(Math.max(...xs))})`;
}
const rate = (x) => (x < 100 ? x.toFixed(1) : Math.round(x).toLocaleString('en-US'));
const micros = (ms) => Math.round(ms * 1000).toLocaleString('en-US');
const ratio = (x) => x.toFixed(2);

/** The figures of `results`, per run: each side named `[group, side, setup]`. */
function figures(results, runs) {
  const find = (run, [group, side, setup], lanes) =>
    results.find((r) => r.run === run && r.group === group && r.side === side && r.setup === setup && r.lanes === lanes);
  /** `value(result)` of each run where the side ran. */
  const perRun = (at, lanes, value) => {
    const out = [];
    for (let run = 1; run <= runs; run++) {
      const r = find(run, at, lanes);
      if (r) out.push(value(r));
    }
    return out;
  };
  /** `value(top) / value(bottom)` of each run where both ran. */
  const ratios = (top, bottom, lanes, value) => {
    const out = [];
    for (let run = 1; run <= runs; run++) {
      const a = find(run, top, lanes);
      const b = find(run, bottom, lanes);
      if (a && b) out.push(value(a) / value(b));
    }
    return out;
  };
  return { perRun, ratios };
}

const workflowsPerSecond = (r) => (r.count / r.ms) * 1000;
const stepLatency = (r) => r.stepMs;

function report(opts, results, replays, context) {
  const { perRun, ratios } = figures(results, opts.runs);
  const ran = (group) => results.some((r) => r.group === group);
  const title = ([group, id]) => SIDES.find((s) => s.group === group && s.id === id).title;
  /** One row a side: rates and step latencies one at a time and 8 at once, then `÷ baseline` of the rates. */
  const table = (rows, baseline) => {
    const heads = ['side', 'one at a time, workflows/s', 'µs a step', '8 at once, workflows/s', 'µs a step'];
    if (baseline) heads.push(`÷ ${baseline.label}, one at a time`, '8 at once');
    console.log(`| ${heads.join(' | ')} |`);
    console.log(`|---|${heads.slice(1).map(() => '---:').join('|')}|`);
    for (const [label, at] of rows) {
      const cells = [label];
      for (const lanes of LANES) cells.push(spread(perRun(at, lanes, workflowsPerSecond), rate), spread(perRun(at, lanes, stepLatency), micros));
      if (baseline) for (const lanes of LANES) cells.push(spread(ratios(at, baseline.at, lanes, workflowsPerSecond), ratio));
      console.log(`| ${cells.join(' | ')} |`);
    }
  };
  /** runstore/workflow ÷ hand-written commits on the same store, workflows a second. */
  const engineOverHand = (rows) => {
    console.log('\nrunstore/workflow ÷ hand-written commits on the same store, workflows a second:\n');
    console.log('| store | one at a time | 8 at once |\n|---|---:|---:|');
    for (const [label, engine, hand] of rows) {
      console.log(`| ${label} | ${LANES.map((lanes) => spread(ratios(engine, hand, lanes, workflowsPerSecond), ratio)).join(' | ')} |`);
    }
  };
  const sidesOf = (group, setup) => SIDES.filter((s) => s.group === group).map((s) => [s.title, [group, s.id, setup]]);

  console.log(`\n# runstore/workflow: ${STEPS} steps a workflow, ${opts.workflows} workflows a measurement, ${opts.runs} runs`);
  console.log(`\nNode ${process.versions.node}; ${context.browser ?? 'no browser'}; ${context.pg ?? 'no PostgreSQL'}; official build SQLite ${context.official ?? '–'}. Load average ${context.loadBefore} before, ${context.loadAfter} after.`);
  console.log('Cells: median (min–max) over the runs; ratios are taken within each run. "µs a step": the mean gap between two consecutive step bodies of one workflow.');
  if (ran('node')) {
    console.log('\n## Node, memory\n');
    table(sidesOf('node', 'memory'), { label: 'better-sqlite3', at: ['node', 'sqlite-memory', 'memory'] });
    engineOverHand([
      ['RunStoreCore', ['node', 'engine-core', 'memory'], ['node', 'hand-core', 'memory']],
      ['RunStore (in the process)', ['node', 'engine-client', 'memory'], ['node', 'hand-client', 'memory']],
    ]);
  }
  if (ran('chromium')) {
    for (const setup of SETUPS.chromium) {
      console.log(`\n## Chromium, OPFS \`${setup}\`\n`);
      table(sidesOf('chromium', setup), { label: 'the official build', at: ['chromium', 'official', setup] });
    }
    engineOverHand(
      SETUPS.chromium.flatMap((setup) => [
        [`RunStore client, \`${setup}\``, ['chromium', 'engine-client', setup], ['chromium', 'hand-client', setup]],
        [`RunStoreCore in a worker, \`${setup}\``, ['chromium', 'engine-core', setup], ['chromium', 'hand-core', setup]],
      ]),
    );
  }
  if (ran('durable')) {
    console.log('\n## Durable beside durable\n');
    const runstore = ran('chromium') ? DURABLE_RUNSTORE.map(([group, id, setup]) => [`${title([group, id])}, OPFS \`${setup}\``, [group, id, setup]]) : [];
    const others = sidesOf('durable', 'durable');
    table([...runstore, ...others]);
    if (runstore.length) {
      console.log('\nPer-step latency, one workflow at a time: runstore ÷ each (below 1: runstore\'s steps take less time):\n');
      console.log(`| runstore side | ${others.map(([label]) => `÷ ${label}`).join(' | ')} |`);
      console.log(`|---|${others.map(() => '---:').join('|')}|`);
      for (const [label, at] of runstore) {
        console.log(`| ${label} | ${others.map(([, other]) => spread(ratios(at, other, 1, stepLatency), ratio)).join(' | ')} |`);
      }
    }
  }
  if (replays.length) {
    console.log(`\n## Replay after an engine restart (${opts.replayRuns} runs)\n`);
    console.log('Node: RunStoreCore on memory; Chromium: the RunStore client on OPFS `full`. "live": from WorkflowEngine.start until the run recorded a signal sent at once (it is taken only after the replay). Heap: JS heap after a full GC, against before the engine started (Chromium: the page\'s heap; the store\'s worker is apart). Beside it, the same run\'s history read through the store and held as objects.\n');
    console.log('| where | steps | events | live, ms | history read, ms | live ÷ read | heap growth, MB | history held, MB | heap ÷ held |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const where of ['node', 'chromium']) {
      for (const steps of opts.replay) {
        const rs = replays.filter((r) => r.where === where && r.steps === steps);
        if (!rs.length) continue;
        const mb = (x) => (x / 1e6).toFixed(1);
        const ms = (x) => x.toFixed(0);
        console.log(`| ${where} | ${steps.toLocaleString('en-US')} | ${rs[0].events.toLocaleString('en-US')} | ${spread(rs.map((r) => r.liveMs), ms)} | ${spread(rs.map((r) => r.readMs), ms)} | ${spread(rs.map((r) => r.liveMs / r.readMs), (x) => x.toFixed(1))} | ${spread(rs.map((r) => r.heapBytes), mb)} | ${spread(rs.map((r) => r.readHeapBytes), mb)} | ${spread(rs.map((r) => r.heapBytes / r.readHeapBytes), (x) => x.toFixed(1))} |`);
      }
    }
  }
  console.log('\nSettings:');
  for (const line of context.settings) console.log(`- ${line}`);
}

// ----- main -----

async function pgSettings() {
  const fields = pgFields();
  const client = new pg.Client({ host: fields.host, port: Number(fields.port), user: fields.user, database: fields.dbname });
  await client.connect();
  const show = async (name) => (await client.query(`SHOW ${name}`)).rows[0][name];
  const line = `PostgreSQL ${await show('server_version')} (fsync=${await show('fsync')}, synchronous_commit=${await show('synchronous_commit')}, wal_sync_method=${await show('wal_sync_method')}, unix socket)`;
  await client.end();
  return line;
}

async function main() {
  const opts = options();
  if (opts.from) {
    // The tables of a run saved with --json, printed again.
    const saved = JSON.parse(readFileSync(opts.from, 'utf8'));
    return report(saved.options, saved.results, saved.replays, saved.context);
  }
  const context = { loadBefore: loadavg().map((x) => x.toFixed(2)).join(' '), settings: [] };
  const needsPage = opts.groups.includes('chromium') || opts.groups.includes('replay');
  let server = null;
  let browser = null;
  let page = null;
  try {
    if (needsPage) {
      server = await serveStatic(join(here, 'dist'));
      // GC and a precise heap figure for the replay's heap growth.
      browser = await launchChromium({ args: [...CHROMIUM_ARGS, '--js-flags=--expose-gc', '--enable-precise-memory-info'] });
      page = await browser.newPage();
      page.on('pageerror', (error) => console.error(`[page] ${error.message}`));
      page.on('console', (message) => message.type() === 'error' && console.error(`[console] ${message.text()}`));
      await page.goto(server.url);
      await page.waitForFunction(() => window.benchReady === true);
      context.browser = (await page.evaluate(() => navigator.userAgent)).match(/(HeadlessChrome|Chrome)\/[\d.]+/)?.[0];
    }
    if (opts.groups.includes('durable')) context.pg = await pgSettings();
    await init();
    const results = await runAll(opts, page);
    const replays = opts.groups.includes('replay') && opts.replay.length ? await runReplays(opts, page) : [];
    if (opts.groups.includes('durable')) {
      for (const open of [() => durably({ lanes: 1 }), () => betterSqlite(true)]) {
        const side = await open();
        context.settings.push(side.settings);
        await side.close();
      }
      context.settings.push(`DBOS Transact ${version('@dbos-inc/dbos-sdk')}: ${context.pg}`);
    }
    const official = results.find((r) => r.version)?.version;
    context.official = official;
    context.settings.push('runstore on OPFS: `full` is WAL with synchronous=FULL (a commit is flushed before it is acknowledged), `relaxed` synchronous=NORMAL; the official build runs the same PRAGMAs (WAL, exclusive locking) on its sahpool VFS');
    context.settings.push(`runstore ${version('runstore')}, durably ${version('@coji/durably')}, better-sqlite3 ${version('better-sqlite3')} (SQLite ${sqliteVersion()})`);
    context.loadAfter = loadavg().map((x) => x.toFixed(2)).join(' ');
    report(opts, results, replays, context);
    if (opts.json) writeFileSync(opts.json, JSON.stringify({ options: opts, context, results, replays }, null, 2));
  } finally {
    await shutdownDbos();
    await browser?.close();
    await server?.close();
  }
}

function version(pkg) {
  return JSON.parse(readFileSync(join(here, 'node_modules', pkg, 'package.json'), 'utf8')).version;
}

await main();
