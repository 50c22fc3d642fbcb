// Time to a usable store, in one page of each engine: the official build in a new worker
// (its module and wasm loaded, its sahpool VFS installed, a database opened in WAL, a row
// written) beside runstore/core in a new worker (the package and its wasm loaded, a store
// opened on OPFS, an event appended) and the main-thread client (`RunStore.open` from the page,
// which starts its worker, then one append), each on a first visit (a new store) and on a
// returning one (the store the first left). Each run takes every side once, in a turning
// order; prints the median of each phase's end, in ms from the start, and the spread.
// Figures only.
//
// Usage (scripts/bench-official.sh --startup builds the page first):
//   node benches/official/startup.mjs [--engines chromium,firefox] [--runs 5]
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { serveStatic, launchEngine } from '../../tests/js/browser.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values } = parseArgs({
  options: {
    engines: { type: 'string', default: 'chromium,firefox' },
    runs: { type: 'string', default: '5' },
  },
});
const SIDES = ['official', 'core', 'client'];
const PHASES = ['loaded', 'initialized', 'opened', 'written'];
const VISITS = ['first', 'returning'];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measureEngine(engine, url, runs) {
  const browser = await launchEngine(engine);
  try {
    const page = await browser.newPage();
    await page.goto(url);
    await page.waitForFunction(() => window.benchReady === true);
    // One of each first, not counted: the browser's caches (the modules, the wasm) warm as an
    // app's returning visitor has them.
    const visit = (side, name, kind) => page.evaluate((args) => window.bench.startup(...args), [side, name, kind]);
    for (const side of SIDES) {
      await visit(side, `startup-warm-${side}`, 'first');
      await visit(side, `startup-warm-${side}`, 'returning');
    }
    const figures = Object.fromEntries(VISITS.map((kind) => [kind, Object.fromEntries(SIDES.map((side) => [side, []]))]));
    for (let run = 0; run < runs; run++) {
      const order = SIDES.map((_, i) => SIDES[(i + run) % SIDES.length]);
      for (const side of order) {
        for (const kind of VISITS) {
          const phases = await visit(side, `startup-${run}-${side}`, kind);
          figures[kind][side].push(phases);
          console.error(`[startup] ${engine} run ${run + 1} ${side} ${kind}: ${JSON.stringify(Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, Math.round(v)])))}`);
        }
      }
    }
    return figures;
  } finally {
    await browser.close();
  }
}

function report(engine, figures, runs, kind) {
  console.log(`\n${engine}, ${kind} visit: ms from the start (new Worker(), or RunStore.open for the client) to the end of each phase, median of ${runs} (min to max)\n`);
  console.log(`| side | ${PHASES.join(' | ')} |`);
  console.log(`|---|${PHASES.map(() => '---:').join('|')}|`);
  for (const side of SIDES) {
    const cells = PHASES.map((phase) => {
      const xs = figures[side].map((f) => f[phase]).filter((x) => x !== undefined);
      if (xs.length === 0) return '';
      return `${Math.round(median(xs))} (${Math.round(Math.min(...xs))} to ${Math.round(Math.max(...xs))})`;
    });
    console.log(`| ${side} | ${cells.join(' | ')} |`);
  }
}

const server = await serveStatic(join(root, 'benches', 'official', 'dist'));
try {
  const runs = Number(values.runs);
  for (const engine of values.engines.split(',')) {
    const figures = await measureEngine(engine, server.url, runs);
    for (const kind of VISITS) report(engine, figures[kind], runs, kind);
  }
} finally {
  await server.close();
}
