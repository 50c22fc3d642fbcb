// Hostile input never harms the store: the table of cases (tests/app/src/hostile.js), the same
// JS exception thousands of times, values read once, and a time-bounded property test over
// the JS boundary, each through the main-thread client and through runstore/core in an app's
// own worker; afterwards the same store closes normally and reopens with nothing changed.
// Through runstore/core also setters on Object.prototype and Array.prototype named like the
// store's answers, and random opens.
// RUNSTORE_FUZZ_MS lengthens the property test (scripts/fuzz-js.sh); RUNSTORE_FUZZ_SEED
// replays one run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestApp } from './browser.mjs';
import { PARAMETERS } from '../../js/methods.js';

const ms = Number(process.env.RUNSTORE_FUZZ_MS ?? 12_000);
const seed = Number(process.env.RUNSTORE_FUZZ_SEED ?? Date.now() % 2 ** 31);
const app = useTestApp();

async function run(entry, repeat) {
  const page = await app.browser.newPage();
  page.on('pageerror', (error) => console.error('page error:', error));
  await page.goto(app.url);
  await page.waitForFunction(() => window.runstore !== undefined);
  const options = { seed, ms, repeat, parameters: PARAMETERS };
  const report = await page.evaluate(([entry, options]) => window[entry](options), [entry, options]);
  await page.close();
  return report;
}

function check(report, label) {
  assert.equal(report.failed, undefined, report.failed);
  if (report.property.failures.length) {
    console.log(`[${label}] property failures:`, JSON.stringify(report.property.failures, null, 1));
  }
  console.log(`[${label}] seed ${seed}: ${report.property.calls} random calls in ${ms} ms ` +
    `(${report.property.trapped} with a prototype setter), ${report.repeated.wrong} wrong of the repeated exceptions`);
  for (const name of ['memvfs', 'memdb']) {
    assert.deepEqual(report.names[name], { code: 'INVALID_INPUT', field: 'name' }, name);
  }
  assert.deepEqual(report.table, [], JSON.stringify(report.table, null, 1).slice(0, 4000));
  assert.deepEqual(report.attacks, [], JSON.stringify(report.attacks, null, 1).slice(0, 4000));
  assert.deepEqual(report.repeated, { wrong: 0, head: 1 });
  assert.deepEqual(report.readOnce.stored, { x: 1, s: 'ok' });
  assert.deepEqual([report.readOnce.reads, report.readOnce.textReads], [1, 1]);
  assert.deepEqual(report.property.failures, [], `seed ${seed}: ${JSON.stringify(report.property.failures, null, 1)}`);
  assert.ok(report.property.calls > 0);
  assert.equal(report.reopened, true);
}

test('through runstore/core in an app worker: hostile input is INVALID_INPUT and harms nothing', async () => {
  const report = await run('runHostileCore', 3000);
  check(report, 'core');
  const opens = report.openProperty;
  console.log(`[core] ${opens.calls} random opens in ${ms / 4} ms, ${opens.opened} of them opened`);
  assert.deepEqual(opens.failures, [], `seed ${seed}: ${JSON.stringify(opens.failures, null, 1)}`);
  assert.ok(opens.calls > 0 && opens.opened > 0);
  console.log(`[core] wasm memory grown by ${report.oversized.grownBytes} bytes refusing a 256 MiB id, 200 MiB of bytes, an array of 2^32-1`);
  assert.deepEqual(report.oversized.codes, ['INVALID_INPUT', 'INVALID_INPUT', 'INVALID_INPUT']);
  assert.ok(report.oversized.grownBytes < 2 ** 20, `${report.oversized.grownBytes} bytes`);
});

test('through the main-thread client: hostile input is INVALID_INPUT and harms nothing', async () => {
  check(await run('runHostileClient', 1000), 'client');
});
