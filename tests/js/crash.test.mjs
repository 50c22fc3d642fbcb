// Steps survive a store worker terminated mid-step, whole or not at all: the test app's page
// (tests/app/src/crash-cycles.js) runs a worker that commits multi-area steps on OPFS
// (full durability) and terminates it at random points, then checks every area through a
// fresh worker. Run by scripts/test-js.sh after it built the app; BROWSER_CRASH_CYCLES
// (default 30) and CRASH_SEED change the run.
//
// There is no raw SQL in the JS API, so `PRAGMA integrity_check` after a kill is the native
// test's (tests/crash_consistency.rs); here every area is read back, and the journal scanned
// for undecodable events. A third as many cycles run on a store encrypted with a key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestApp } from './browser.mjs';

const cycles = Number(process.env.BROWSER_CRASH_CYCLES ?? 30);
const seed = Number(process.env.CRASH_SEED ?? 0x5eed);
const app = useTestApp();

/** Runs the cycles in a fresh page, encrypted with `key` when there is one; checks the report. */
async function crashCycles(cycles, key) {
  const page = await app.browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  await page.goto(app.url);
  await page.waitForFunction(() => window.runCrashCycles !== undefined);
  const started = performance.now();
  const report = await page.evaluate(([cycles, seed, key]) => window.runCrashCycles(cycles, seed, key), [cycles, seed, key]);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `browser crash cycles${key ? ' (encrypted)' : ''}: ${report.cycles}, acknowledged steps: ${report.acknowledged}, ` +
      `steps found: ${report.found} (seed ${seed}, ${seconds} s; re-sent steps applied: ` +
      `${report.resent}, replayed: ${report.replayed}; steps committed with their ack lost: ` +
      `${report.committedUnacknowledged})`,
  );
  assert.deepEqual(report.problems, []);
  assert.equal(report.cycles, cycles);
  assert.ok(report.acknowledged > 0, 'no step was acknowledged');
  assert.ok(report.found >= report.acknowledged);
  // The plain store's bytes hold SQLite's header, the encrypted store's never.
  const name = key ? 'crash-steps-encrypted' : 'crash-steps';
  assert.equal(await page.evaluate((name) => window.holdsPlainHeader(name), name), !key);
  await page.close();
}

test('a worker terminated mid-step keeps every acknowledged step whole, and no step in part', async () => {
  await crashCycles(cycles, null);
});

test('the same on an encrypted store', async () => {
  await crashCycles(Math.max(1, Math.round(cycles / 3)), Array.from({ length: 32 }, (_, i) => i + 1));
});
