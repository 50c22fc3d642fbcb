// The saver benchmark (scripts/bench-langgraph.sh): RunStoreSaver in Node (runstore/core,
// memory) and in headless Chromium (OPFS, main-thread client) beside LangGraph's official
// SqliteSaver (@langchain/langgraph-checkpoint-sqlite, better-sqlite3 on a file) in Node, in one
// run: put + putWrites, getTuple (by id and latest), list (limit 10) and a graph of 50
// super-steps, as operations per second, and the bytes stored per checkpoint.
// Usage: node bench.mjs [--checkpoints N] [--runs R] [--json FILE]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { RunStoreSaver } from 'runstore/langgraph';
import { launchChromium, serveStatic } from '../js/browser.mjs';
import { graphWorkload, saverWorkload } from './src/bench-workload.js';
import { openCoreStore } from './src/node-store.js';

const { values } = parseArgs({ options: { checkpoints: { type: 'string', default: '500' }, runs: { type: 'string', default: '5' }, json: { type: 'string' } } });
const n = Number(values.checkpoints);
const runs = Number(values.runs);

async function runstoreNode() {
  const store = await openCoreStore('saver-bench');
  try {
    const saver = new RunStoreSaver(store);
    await saverWorkload(saver, 20); // warm-up: the wasm and the JIT, not measured
    const before = store.storageStats();
    const ops = await saverWorkload(saver, n);
    const after = store.storageStats();
    const bytes = (after.pageCount - after.freelistCount - (before.pageCount - before.freelistCount)) * after.pageSize;
    return { ...ops, ...(await graphWorkload(saver, runs)), bytesPerCheckpoint: Math.round(bytes / n) };
  } finally {
    await store.close();
  }
}

async function sqliteNode() {
  const dir = mkdtempSync(join(tmpdir(), 'saver-bench-'));
  try {
    const saver = SqliteSaver.fromConnString(join(dir, 'checkpoints.db'));
    const pages = () => saver.db.pragma('page_count', { simple: true }) - saver.db.pragma('freelist_count', { simple: true });
    await saverWorkload(saver, 20); // warm-up (and the tables), not measured
    const before = pages();
    const ops = await saverWorkload(saver, n);
    const bytes = (pages() - before) * saver.db.pragma('page_size', { simple: true });
    const result = { ...ops, ...(await graphWorkload(saver, runs)), bytesPerCheckpoint: Math.round(bytes / n) };
    saver.db.close();
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runstoreChromium() {
  const server = await serveStatic(fileURLToPath(new URL('./dist', import.meta.url)));
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    page.on('pageerror', (error) => console.error('page error:', error));
    await page.goto(`${server.url}bench.html`);
    await page.waitForFunction(() => window.benchReady);
    return await page.evaluate(([count, rounds]) => window.bench(count, rounds), [n, runs]);
  } finally {
    await browser.close();
    await server.close();
  }
}

const sides = {
  'runstore, Node (memory)': await runstoreNode(),
  'runstore, Chromium (OPFS)': await runstoreChromium(),
  'SqliteSaver, Node (file)': await sqliteNode(),
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
const format = (value) => (value < 100 ? value.toFixed(1) : Math.round(value).toLocaleString('en-US'));
const official = sides['SqliteSaver, Node (file)'];
console.log(`\nLangGraph checkpoint savers: ${n} checkpoints on one thread, ${runs} graph runs (Node ${process.versions.node})\n`);
console.log(`| | ${names.join(' | ')} | runstore Node ÷ SqliteSaver | runstore Chromium ÷ SqliteSaver |`);
console.log(`|---|${names.map(() => '---:').join('|')}|---:|---:|`);
for (const [label, key] of rows) {
  const cells = names.map((name) => format(sides[name][key]));
  const ratio = (side) => (sides[side][key] / official[key]).toFixed(2);
  console.log(`| ${label} | ${cells.join(' | ')} | ${ratio(names[0])} | ${ratio(names[1])} |`);
}
if (values.json) writeFileSync(values.json, JSON.stringify({ checkpoints: n, runs, sides }, null, 2));
