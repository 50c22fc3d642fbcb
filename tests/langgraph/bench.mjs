// The saver benchmark (scripts/bench-langgraph.sh): RunStoreSaver in Node (runstore/core,
// memory) and in headless Chromium (OPFS, main-thread client) beside LangGraph's official
// SqliteSaver (@langchain/langgraph-checkpoint-sqlite, better-sqlite3 on a file) and its
// MemorySaver (nothing stored: LangGraph's own cost) in Node, in one run: put + putWrites, getTuple (by id and latest), list (limit 10) and a graph of 50
// super-steps, as operations per second, and the bytes stored per checkpoint.
// Usage: node bench.mjs [--checkpoints N] [--runs R] [--warmup W] [--rounds K] [--json FILE]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MemorySaver } from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { RunStoreSaver } from 'runstore/langgraph';
import { launchChromium, serveStatic } from '../js/browser.mjs';
import { graphWorkload, measureSaver, saverWorkload, sqliteSaverPages, storePages } from './src/bench-workload.js';
import { openCoreStore } from './src/node-store.js';

const { values } = parseArgs({
  options: {
    checkpoints: { type: 'string', default: '500' },
    runs: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    json: { type: 'string' },
  },
});
const n = Number(values.checkpoints);
const runs = Number(values.runs);
const warmup = Number(values.warmup);
const rounds = Number(values.rounds);

/**
 * The workload at `warmup` checkpoints and one graph run, unmeasured: the tables and the JIT,
 * which also compiles the code both Node sides share (LangGraph, its serializer). V8 compiles
 * the store's wasm in its optimizing tier only once a function has run a while: runstore's
 * figures settle after about 1,000 checkpoints.
 */
async function warm(saver) {
  await saverWorkload(saver, warmup);
  await graphWorkload(saver, 1);
}

/**
 * The Node sides, each warmed up before any is measured, so that none warms the others' shared
 * code. LangGraph's MemorySaver (objects in memory, nothing stored) is the floor: what
 * LangGraph itself costs.
 */
async function nodeSides() {
  const store = await openCoreStore('saver-bench');
  const dir = mkdtempSync(join(tmpdir(), 'saver-bench-'));
  try {
    const runstore = new RunStoreSaver(store);
    const sqlite = SqliteSaver.fromConnString(join(dir, 'checkpoints.db'));
    const memory = new MemorySaver();
    await warm(runstore);
    await warm(sqlite);
    await warm(memory);
    const measure = (saver, pages) => measureSaver(saver, pages, n, runs);
    const [runstorePages, sqlitePages] = [storePages(store), sqliteSaverPages(sqlite)];
    // Rounds alternate which side goes first (each on a new thread), and each figure is the
    // median of its rounds: a load that comes and goes on the machine weighs on both sides.
    const measured = {
      runstore: () => measure(runstore, runstorePages),
      sqlite: () => measure(sqlite, sqlitePages),
      memory: () => measure(memory, () => ({ pages: NaN, pageSize: NaN })),
    };
    const figures = { runstore: [], sqlite: [], memory: [] };
    const turns = [['runstore', 'sqlite', 'memory'], ['sqlite', 'memory', 'runstore'], ['memory', 'runstore', 'sqlite']];
    for (let round = 0; round < rounds; round += 1) {
      for (const side of turns[round % turns.length]) figures[side].push(await measured[side]());
    }
    sqlite.db.close();
    return { runstore: medians(figures.runstore), sqlite: medians(figures.sqlite), memory: medians(figures.memory) };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each figure's median over the rounds. */
function medians(results) {
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return Object.fromEntries(Object.keys(results[0]).map((key) => [key, median(results.map((result) => result[key]))]));
}

async function runstoreChromium() {
  const server = await serveStatic(fileURLToPath(new URL('./dist', import.meta.url)));
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    page.on('pageerror', (error) => console.error('page error:', error));
    await page.goto(`${server.url}bench.html`);
    await page.waitForFunction(() => window.benchReady);
    const results = await page.evaluate(([count, graphRuns, warmCount, times]) => window.bench(count, graphRuns, warmCount, times), [n, runs, warmup, rounds]);
    return medians(results);
  } finally {
    await browser.close();
    await server.close();
  }
}

const node = await nodeSides();
const sides = {
  'runstore, Node (memory)': node.runstore,
  'runstore, Chromium (OPFS)': await runstoreChromium(),
  'SqliteSaver, Node (file)': node.sqlite,
  'MemorySaver, Node (nothing stored)': node.memory,
};
const rows = [
  ['put + putWrites /s', 'put'],
  ['getTuple by id /s', 'getTuple'],
  ['getTuple latest /s', 'latest'],
  ['list, limit 10 /s', 'list'],
  ['graph of 50 super-steps, runs/s', 'graphRuns'],
  ['bytes per checkpoint', 'bytesPerCheckpoint'],
];
const names = Object.keys(sides);
const format = (value) => (Number.isNaN(value) ? '' : value < 100 ? value.toFixed(1) : Math.round(value).toLocaleString('en-US'));
const official = sides['SqliteSaver, Node (file)'];
console.log(`\nLangGraph checkpoint savers: ${n} checkpoints on one thread, ${runs} graph runs, after a warm-up of ${warmup} checkpoints and 1 graph run, medians of ${rounds} rounds (Node ${process.versions.node})\n`);
console.log(`| | ${names.join(' | ')} | runstore Node ÷ SqliteSaver | runstore Chromium ÷ SqliteSaver |`);
console.log(`|---|${names.map(() => '---:').join('|')}|---:|---:|`);
for (const [label, key] of rows) {
  const cells = names.map((name) => format(sides[name][key]));
  const ratio = (side) => (sides[side][key] / official[key]).toFixed(2);
  console.log(`| ${label} | ${cells.join(' | ')} | ${ratio(names[0])} | ${ratio(names[1])} |`);
}
if (values.json) writeFileSync(values.json, JSON.stringify({ checkpoints: n, runs, warmup, rounds, sides }, null, 2));
