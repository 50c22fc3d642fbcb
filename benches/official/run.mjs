// Runs W1-W5 through runstore's public JS API (runstore/core in a worker, and the main-thread
// RunStore client) beside the official SQLite wasm build running the same SQL, in one page of
// each browser engine (Chromium, Firefox, WebKit), and prints Markdown tables: medians of the
// runs with their spreads, the ratios taken within each run, and each engine beside Chromium.
// Figures only, no assertions on speed.
//
// Usage (scripts/bench-official.sh builds the page first; WebKit needs a display, xvfb-run):
//   node benches/official/run.mjs [--engines chromium,firefox,webkit] [--workloads W1,W3]
//     [--setups memory,opfs-full,indexeddb] [--sides core,official,plain,client,exclusive]
//     [--runs 3] [--scale 1] [--json FILE]
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { serveStatic, launchEngine } from '../../tests/js/browser.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const WORKLOADS = {
  W1: ['W1 single appends', 'appends'],
  W2: ['W2 batched appends', 'events'],
  W3: ['W3 history reads', 'events'],
  W4: ['W4 outbox, batch complete', 'rows'],
  W4each: ['W4 outbox, one completeOutbox per row', 'rows'],
  W5: ['W5 checkpoint CAS', 'updates'],
};
const SETUPS = {
  'opfs-relaxed': 'OPFS (sahpool): runstore `relaxed` beside official `synchronous=NORMAL`',
  'opfs-full': 'OPFS (sahpool): runstore `full` beside official `synchronous=FULL`',
  indexeddb: 'IndexedDB: runstore `full` (each write stored strictly before it is acknowledged); the official build has no IndexedDB VFS',
  memory: 'memory: runstore `memory` beside official `:memory:`',
  'opfs-relaxed-encrypted': 'OPFS (sahpool), `relaxed`, encrypted with a 32-byte key (runstore only)',
  'opfs-full-encrypted': 'OPFS (sahpool), `full`, encrypted with a 32-byte key (runstore only)',
  'indexeddb-encrypted': 'IndexedDB, `full`, encrypted with a 32-byte key (runstore only)',
};
/** The setups run unless named: the encrypted ones only when asked for. */
const DEFAULT_SETUPS = ['opfs-relaxed', 'opfs-full', 'indexeddb', 'memory'];
const ENGINES = ['chromium', 'firefox', 'webkit'];
/** What an engine can run: WebKitGTK has no OPFS sync access handles (for either build). */
const canRun = (engine, setup) => engine !== 'webkit' || !setup.startsWith('opfs');
/** The sides on the official build (`official`, `plain`). */
const ON_OFFICIAL = new Set(['official', 'plain']);
/** The official build has no IndexedDB VFS and no encryption: those setups run runstore's sides only. */
const sidesFor = (setup, sides) =>
  setup.startsWith('indexeddb') || setup.endsWith('-encrypted') ? sides.filter((side) => !ON_OFFICIAL.has(side)) : sides;
// `official` runs runstore's own schema and statements on the official build; `plain` the SQL a
// developer would write by hand for the same jobs (src/plain.js), also on the official build.
// `exclusive`, not run unless named: the client on an `exclusive: true` store, whose writes
// carry no request id (no request-log row each), beside the shared store's `client`.
const SIDE_TITLES = {
  core: 'runstore/core',
  official: 'official',
  plain: 'plain',
  client: 'client',
  exclusive: 'exclusive',
};
const SIDES = Object.keys(SIDE_TITLES);
const DEFAULT_SIDES = ['core', 'official', 'plain', 'client'];
const WARMUP_SCALE = 0.02;

function options() {
  const { values } = parseArgs({
    options: {
      engines: { type: 'string', default: ENGINES.join(',') },
      workloads: { type: 'string', default: Object.keys(WORKLOADS).join(',') },
      setups: { type: 'string', default: DEFAULT_SETUPS.join(',') },
      sides: { type: 'string', default: DEFAULT_SIDES.join(',') },
      runs: { type: 'string', default: '3' },
      scale: { type: 'string', default: '1' },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(6, 10).join('\n'));
    process.exit(0);
  }
  const list = (text, known, what) =>
    text.split(',').map((item) => {
      if (!known.includes(item)) throw new Error(`unknown ${what} "${item}"; known: ${known.join(', ')}`);
      return item;
    });
  const runs = Number(values.runs);
  const scale = Number(values.scale);
  if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs takes a whole number of at least 1');
  if (!(scale > 0 && scale <= 1)) throw new Error('--scale takes a number in (0, 1]');
  return {
    engines: list(values.engines, ENGINES, 'engine'),
    workloads: list(values.workloads, Object.keys(WORKLOADS), 'workload'),
    setups: list(values.setups, Object.keys(SETUPS), 'setup'),
    sides: list(values.sides, SIDES, 'side'),
    runs,
    scale,
    json: values.json,
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const rate = (x) => Math.round(x).toLocaleString('en-US');
const ratio = (x) => x.toFixed(2);
/** "median (min–max)" over the runs, or the single value of one run. */
function spread(xs, format) {
  if (xs.length === 0) return '–';
  if (xs.length === 1) return format(xs[0]);
  return `${format(median(xs))} (${format(Math.min(...xs))}–${format(Math.max(...xs))})`;
}

/** One measurement in the page: { count, ms } of the timed part. */
const measureIn = (page, side, setup, workload, scale, name) =>
  page.evaluate((args) => window.bench.measure(...args), [side, setup, workload, scale, name]);

/**
 * Untimed: every side runs every workload once at a small scale first, so that no side's first
 * measurement pays for compiling and tiering up its code alone.
 */
async function warmUp(page, opts) {
  for (const setup of opts.setups) {
    for (const workload of opts.workloads) {
      for (const side of sidesFor(setup, opts.sides)) {
        const name = `warmup-${setup}-${workload}-${side}`.toLowerCase();
        await measureIn(page, side, setup, workload, Math.min(WARMUP_SCALE, opts.scale), name);
      }
    }
  }
}

/** Round trips timed per run for the floor (a bare worker postMessage round trip). */
const FLOOR_CALLS = 2000;
/** The workloads whose unit is one awaited call on every side. */
const ONE_CALL_UNITS = ['W1', 'W5'];

async function measureAll(page, opts) {
  const results = [];
  const floors = [];
  for (let run = 0; run < opts.runs; run++) {
    const floor = await page.evaluate((calls) => window.bench.postMessageRoundTrip(calls), FLOOR_CALLS);
    floors.push(floor);
    console.error(`[bench] ${opts.engine} run ${run + 1} bare postMessage round trip: ${floor.toFixed(1)} µs`);
    for (const setup of opts.setups) {
      // Each run starts with another side, so that no side always runs first or last.
      const sides = sidesFor(setup, opts.sides);
      const order = sides.map((_, i) => sides[(i + run) % sides.length]);
      for (const workload of opts.workloads) {
        for (const side of order) {
          const name = `bench-${run + 1}-${setup}-${workload}-${side}`.toLowerCase();
          const { count, ms } = await measureIn(page, side, setup, workload, opts.scale, name);
          const perSecond = count / (ms / 1000);
          results.push({ engine: opts.engine, run: run + 1, setup, workload, side, count, ms, perSecond });
          console.error(`[bench] ${opts.engine} run ${run + 1} ${setup} ${workload} ${side}: ${count} in ${ms.toFixed(1)} ms = ${rate(perSecond)}/s`);
        }
      }
    }
  }
  return { results, floors };
}

/** Every measurement in `engine`'s page: { results, floors, userAgent }. */
async function benchEngine(engine, url, opts) {
  const browser = await launchEngine(engine);
  try {
    const page = await browser.newPage();
    page.on('pageerror', (error) => console.error(`[page ${engine}] ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') console.error(`[console ${engine}] ${message.text()}`);
    });
    await page.goto(url);
    await page.waitForFunction(() => window.benchReady === true);
    const setups = opts.setups.filter((setup) => canRun(engine, setup));
    const engineOpts = { ...opts, engine, setups };
    await warmUp(page, engineOpts);
    const measured = await measureAll(page, engineOpts);
    return { ...measured, userAgent: await page.evaluate(() => navigator.userAgent), setups };
  } finally {
    await browser.close();
  }
}

async function main() {
  const opts = options();
  const server = await serveStatic(join(root, 'benches', 'official', 'dist'));
  const byEngine = {};
  try {
    for (const engine of opts.engines) byEngine[engine] = await benchEngine(engine, server.url, opts);
  } finally {
    await server.close();
  }
  for (const engine of opts.engines) {
    const { results, floors, userAgent, setups } = byEngine[engine];
    report({ ...opts, setups }, results, floors, engine, userAgent);
  }
  if (opts.engines.length > 1) compareEngines(opts, byEngine);
  if (opts.json) writeFileSync(opts.json, JSON.stringify({ options: opts, byEngine }, null, 2));
}

/** The browser's name and version from its user agent. */
function browserName(userAgent) {
  const match = /(HeadlessChrome|Chrome|Firefox)\/[\d.]+/.exec(userAgent) ?? /AppleWebKit\/[\d.]+/.exec(userAgent);
  return match?.[0] ?? userAgent;
}

function report(opts, results, floors, engine, userAgent) {
  const version = (pkg) => JSON.parse(readFileSync(join(root, ...pkg, 'package.json'), 'utf8')).version;
  const officialVersion = version(['node_modules', '@sqlite.org', 'sqlite-wasm']);
  console.log(`\n## ${engine}: ${browserName(userAgent)}, @sqlite.org/sqlite-wasm ${officialVersion}, runstore ${version([])}; ` +
    `${opts.runs} run(s), scale ${opts.scale}. Cells: median (min–max) over the runs; ratios are taken within each run.`);
  const of = (run, setup, workload, side) =>
    results.find((r) => r.run === run && r.setup === setup && r.workload === workload && r.side === side)?.perSecond;
  const perRun = (setup, workload, side) =>
    results.filter((r) => r.setup === setup && r.workload === workload && r.side === side).map((r) => r.perSecond);
  const ratios = (setup, workload, top, bottom) => {
    const out = [];
    for (let run = 1; run <= opts.runs; run++) {
      const a = of(run, setup, workload, top);
      const b = of(run, setup, workload, bottom);
      if (a !== undefined && b !== undefined) out.push(a / b);
    }
    return out;
  };
  const ran = (side) => opts.sides.includes(side);
  // The ratios worth a column, where both sides ran: [title, top, bottom].
  const RATIOS = [
    ['core ÷ official', 'core', 'official'],
    ['core ÷ plain', 'core', 'plain'],
    ['client ÷ core', 'client', 'core'],
    ['client ÷ plain', 'client', 'plain'],
    ['exclusive ÷ core', 'exclusive', 'core'],
  ].filter(([, top, bottom]) => ran(top) && ran(bottom));
  for (const setup of opts.setups) {
    console.log(`\n${SETUPS[setup]}\n`);
    const columns = [...opts.sides.map((side) => `${SIDE_TITLES[side]}, unit/s`), ...RATIOS.map(([title]) => title)];
    console.log(`| workload | unit | ${columns.join(' | ')} |`);
    console.log(`|---|---|${columns.map(() => '---:').join('|')}|`);
    for (const workload of opts.workloads) {
      const [title, unit] = WORKLOADS[workload];
      const cells = [
        ...opts.sides.map((side) => spread(perRun(setup, workload, side), rate)),
        ...RATIOS.map(([, top, bottom]) => spread(ratios(setup, workload, top, bottom), ratio)),
      ];
      console.log(`| ${title} | ${unit} | ${cells.join(' | ')} |`);
    }
  }
  const summary = (title, top, bottom) => {
    if (!ran(top) || !ran(bottom)) return;
    console.log(`\n${title}\n`);
    console.log(`| workload | ${opts.setups.join(' | ')} |`);
    console.log(`|---|${opts.setups.map(() => '---:').join('|')}|`);
    for (const workload of opts.workloads) {
      const cells = opts.setups.map((setup) => spread(ratios(setup, workload, top, bottom), ratio));
      console.log(`| ${WORKLOADS[workload][0]} | ${cells.join(' | ')} |`);
    }
  };
  summary('runstore/core ÷ official, same schema and statements (median of the per-run ratios, spread):', 'core', 'official');
  summary('runstore/core ÷ hand-written SQL on the official build (plain.js):', 'core', 'plain');
  summary('main-thread client ÷ runstore/core:', 'client', 'core');
  summary('main-thread client ÷ hand-written SQL on the official build:', 'client', 'plain');
  summary('main-thread client on an exclusive store ÷ runstore/core:', 'exclusive', 'core');
  // An encrypted setup beside the same setup plain, when both ran: each side's rate encrypted
  // ÷ plain within each run.
  const pairs = opts.setups
    .filter((setup) => setup.endsWith('-encrypted') && opts.setups.includes(setup.slice(0, -'-encrypted'.length)))
    .map((setup) => [setup, setup.slice(0, -'-encrypted'.length)]);
  const runstoreSides = opts.sides.filter((side) => !ON_OFFICIAL.has(side));
  if (pairs.length > 0) {
    console.log('\nencrypted ÷ the same store plain (median of the per-run ratios, spread):\n');
    const columns = pairs.flatMap(([, plain]) => runstoreSides.map((side) => `${SIDE_TITLES[side]}, ${plain}`));
    console.log(`| workload | ${columns.join(' | ')} |`);
    console.log(`|---|${columns.map(() => '---:').join('|')}|`);
    for (const workload of opts.workloads) {
      const cells = pairs.flatMap(([encrypted, plain]) =>
        runstoreSides.map((side) => {
          const out = [];
          for (let run = 1; run <= opts.runs; run++) {
            const a = of(run, encrypted, workload, side);
            const b = of(run, plain, workload, side);
            if (a !== undefined && b !== undefined) out.push(a / b);
          }
          return spread(out, ratio);
        }),
      );
      console.log(`| ${WORKLOADS[workload][0]} | ${cells.join(' | ')} |`);
    }
  }
  clientCost(opts, results, floors);
}

/**
 * What a client call adds to the same call on runstore/core (1/client − 1/core per unit, in
 * µs, for the workloads whose unit is one call), beside the floor under it: a bare worker
 * postMessage round trip timed in the same page.
 */
function clientCost(opts, results, floors) {
  const micros = (x) => x.toFixed(0);
  console.log(`\nbare worker postMessage round trip (${FLOOR_CALLS} awaited in turn, per run): ${spread(floors, (x) => x.toFixed(1))} µs`);
  const workloads = opts.workloads.filter((w) => ONE_CALL_UNITS.includes(w));
  if (!opts.sides.includes('client') || !opts.sides.includes('core') || workloads.length === 0) return;
  console.log('\nclient call minus the same call on runstore/core, µs per call:\n');
  console.log(`| workload | ${opts.setups.join(' | ')} |`);
  console.log(`|---|${opts.setups.map(() => '---:').join('|')}|`);
  for (const workload of workloads) {
    const cells = opts.setups.map((setup) => {
      const added = [];
      for (let run = 1; run <= opts.runs; run++) {
        const at = (side) => results.find((r) => r.run === run && r.setup === setup && r.workload === workload && r.side === side);
        const client = at('client');
        const core = at('core');
        if (client && core) added.push(((client.ms - core.ms) * 1000) / client.count);
      }
      return spread(added, micros);
    });
    console.log(`| ${WORKLOADS[workload][0]} | ${cells.join(' | ')} |`);
  }
}

await main();

/**
 * Each engine beside Chromium: for runstore/core and for the client, per setup and workload,
 * the engine's median rate, its ratio to Chromium's median (the engines run one after the
 * other, so the ratio is of medians) and, for runstore/core, its ratio to the official build in
 * the same engine (the median of the per-run ratios).
 */
function compareEngines(opts, byEngine) {
  const engines = opts.engines;
  const medianOf = (engine, setup, workload, side) => {
    const xs = byEngine[engine].results.filter((r) => r.setup === setup && r.workload === workload && r.side === side);
    return xs.length ? median(xs.map((r) => r.perSecond)) : undefined;
  };
  const officialRatio = (engine, setup, workload) => {
    const { results } = byEngine[engine];
    const out = [];
    for (let run = 1; run <= opts.runs; run++) {
      const at = (side) => results.find((r) => r.run === run && r.setup === setup && r.workload === workload && r.side === side);
      if (at('core') && at('official')) out.push(at('core').perSecond / at('official').perSecond);
    }
    return out.length ? ratio(median(out)) : '–';
  };
  for (const side of ['core', 'client'].filter((s) => opts.sides.includes(s))) {
    const name = side === 'core' ? 'runstore/core' : 'main-thread client';
    console.log(`\nEvery engine, ${name}: unit/s (÷ Chromium)${side === 'core' ? '; core ÷ official in the same engine' : ''}\n`);
    const heads = engines.map((e) => e);
    const extra = side === 'core' ? engines.map((e) => `÷ official (${e})`) : [];
    console.log(`| setup | workload | ${[...heads, ...extra].join(' | ')} |`);
    console.log(`|---|---|${[...heads, ...extra].map(() => '---:').join('|')}|`);
    for (const setup of opts.setups) {
      for (const workload of opts.workloads) {
        const base = medianOf('chromium', setup, workload, side);
        const cells = engines.map((engine) => {
          const value = medianOf(engine, setup, workload, side);
          if (value === undefined) return '–';
          const vsChromium = base !== undefined && engine !== 'chromium' ? ` (${ratio(value / base)})` : '';
          return `${rate(value)}${vsChromium}`;
        });
        const official = side === 'core' ? engines.map((engine) => officialRatio(engine, setup, workload)) : [];
        console.log(`| ${setup} | ${WORKLOADS[workload][0]} | ${[...cells, ...official].join(' | ')} |`);
      }
    }
  }
}
