// The main-thread client against runstore/core in a worker (printed figures, not assertions):
// the SPEC §5 workloads W1-W5 (scaled by BENCH_SCALE) on OPFS, durability full, in one Chromium
// run: core in an app's worker (the baseline), core with each write as the client's worker
// sends it (a step under a request id), the client in the leader tab with each call awaited
// in turn and with independent calls issued together, and the client in a follower tab.
// Run by scripts/bench-client.sh. Env: BENCH_SCALE (0.2), BENCH_ROUNDS (3).
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { serveStatic, launchChromium } from './browser.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCALE = Number(process.env.BENCH_SCALE ?? 0.2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PER_CALL = Number(process.env.BENCH_PER_CALL ?? 300);
const WORKLOADS = ['W1', 'W2', 'W3', 'W4', 'W5'];

const server = await serveStatic(join(root, 'tests', 'app', 'dist'));
const browser = await launchChromium();
const openApp = async () => {
  const page = await browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  await page.goto(server.url);
  await page.waitForFunction(() => window.bench !== undefined);
  return page;
};
const leader = await openApp();
const follower = await openApp();

const runs = { core: [], coreAsClient: [], client: [], together: [], follower: [] };
const perCall = { core: [], coreAsClient: [], client: [], follower: [] };
const messaging = [];
for (let round = 0; round < ROUNDS; round++) {
  const name = `bench-client-${round}`;
  if (!(await leader.evaluate((name) => window.bench.open(name), name))) throw new Error('the first tab does not lead');
  if (await follower.evaluate((name) => window.bench.open(name), name)) throw new Error('the second tab leads');
  for (const [i, page] of [leader, follower].entries()) {
    await page.evaluate((prefix) => window.bench.client({ prefix, scale: 0.01, together: false }), `warm${i}-`);
  }
  runs.core.push(await leader.evaluate((o) => window.bench.core(o), { name: `bench-core-${round}`, scale: SCALE, asClient: false }));
  runs.coreAsClient.push(await leader.evaluate((o) => window.bench.core(o), { name: `bench-steps-${round}`, scale: SCALE, asClient: true }));
  runs.client.push(await leader.evaluate((o) => window.bench.client(o), { prefix: 'one-', scale: SCALE, together: false }));
  runs.together.push(await leader.evaluate((o) => window.bench.client(o), { prefix: 'all-', scale: SCALE, together: true }));
  runs.follower.push(await follower.evaluate((o) => window.bench.client(o), { prefix: 'follow-', scale: SCALE, together: false }));
  const n = PER_CALL;
  perCall.core.push(await leader.evaluate((o) => window.bench.core(o), { name: `bench-pc-core-${round}`, n, asClient: false }));
  perCall.coreAsClient.push(await leader.evaluate((o) => window.bench.core(o), { name: `bench-pc-steps-${round}`, n, asClient: true }));
  perCall.client.push(await leader.evaluate((o) => window.bench.clientPerCall(o), { prefix: 'pc-lead-', n }));
  perCall.follower.push(await follower.evaluate((o) => window.bench.clientPerCall(o), { prefix: 'pc-follow-', n }));
  messaging.push(await leader.evaluate((n) => window.bench.messaging(n), n));
  await follower.evaluate(() => window.benchStore.close());
  await leader.evaluate(() => window.benchStore.close());
}
await browser.close();
await server.close();

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const spread = (values) => (values.length > 1 ? ` ±${(((Math.max(...values) - Math.min(...values)) / 2 / median(values)) * 100).toFixed(0)}%` : '');
/** Ops/s ratio `a` ÷ `b` (time of b over time of a) within each round; the median over rounds. */
const ratio = (a, b, w) => median(runs[a].map((run, i) => runs[b][i][w] / run[w])).toFixed(2);
console.log(`Workloads at scale ${SCALE} of SPEC §5, OPFS durability full, median ms of ${ROUNDS} rounds (± half the spread):`);
console.log('| workload | core | core, writes as steps | client | client, together | follower | client ÷ core | together ÷ core | follower ÷ client |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const w of WORKLOADS) {
  const cell = (kind) => `${median(runs[kind].map((r) => r[w])).toFixed(0)}${spread(runs[kind].map((r) => r[w]))}`;
  console.log(`| ${w} | ${cell('core')} | ${cell('coreAsClient')} | ${cell('client')} | ${cell('together')} | ${cell('follower')} | ${ratio('client', 'core', w)} | ${ratio('together', 'core', w)} | ${ratio('follower', 'client', w)} |`);
}

console.log(`\nPer call, µs, ${PER_CALL} of each awaited in turn (headTogether: ${PER_CALL} issued at once), median of ${ROUNDS} rounds:`);
console.log('| call | core | core, writes as steps | client (leader tab) | follower tab | client ÷ core | follower ÷ client |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const call of ['head', 'headTogether', 'append100', 'read500']) {
  const m = (kind) => median(perCall[kind].map((r) => r[call]));
  const ratioOf = (a, b) => median(perCall[a].map((r, i) => perCall[b][i][call] / r[call])).toFixed(2);
  console.log(`| ${call} | ${m('core').toFixed(0)} | ${m('coreAsClient').toFixed(0)} | ${m('client').toFixed(0)} | ${m('follower').toFixed(0)} | ${ratioOf('client', 'core')} | ${ratioOf('follower', 'client')} |`);
}
const mm = (key) => median(messaging.map((r) => r[key])).toFixed(0);
console.log(`messages alone, µs: an empty round trip to a worker ${mm('ping')}; structuredClone of 100 events ${mm('clone100')}, of a page of 500 ${mm('clone500')}`);
