// The child process of tests/js/node-file-crash.test.mjs, on a store in a file
// (`persistence: 'file'`). Two modes:
//
// node node-file-writer.mjs write <directory> <name> <seed> <full|relaxed> [<last acked step>]
//   Prints `opening`, opens the store, resumes from the steps committed (the plan's checkpoint
//   counts them) and prints `ready <n>`; re-sends the first unacknowledged step when it has a request id (it
//   must come back replayed if it committed), then commits the plan's multi-area steps
//   (tests/app/src/crash-plan.js, the browser crash test's) one after the other, printing
//   `ack <k> <new|resent|replayed>` after each commit returned, until it is killed.
//
// node node-file-writer.mjs hold <directory> <name>
//   Prints `ready` once the wasm is loaded, opens the store on a `go` line from stdin and
//   prints `won` or `error <code>`, then closes it on a `close` line and prints `closed`.
//   The test starts two at once to race for the store's lock (also as worker threads).
import { createInterface } from 'node:readline';
import { init, RunStoreCore } from '../../js/core.js';
import { Plan, requestId } from '../app/src/crash-plan.js';
import { committedSteps } from '../app/src/crash-check.js';

const [mode, directory, name, ...rest] = process.argv.slice(2);
// Pipes are synchronous on Linux: a line written is in the pipe before the next commit starts,
// so the test never sees an ack of a commit that had not returned.
const say = (line) => process.stdout.write(`${line}\n`);

async function write(seed, durability, acked) {
  say('opening'); // the test kills some writers in their open: in the lock's take-over, in recovery
  const store = await RunStoreCore.open(name, { persistence: 'file', directory, durability });
  const plan = new Plan(seed);
  const n = committedSteps(store);
  say(`ready ${n}`);
  const firstUnacked = acked === undefined ? 0 : acked + 1;
  if (firstUnacked < n && requestId(firstUnacked) !== undefined) {
    const outcome = store.commit(plan.step(firstUnacked));
    if (!outcome.replayed || JSON.stringify(outcome.outcomes) !== plan.outcomes(firstUnacked)) {
      throw new Error(`step ${firstUnacked} re-sent: ${JSON.stringify(outcome)} (applied twice?)`);
    }
    say(`ack ${firstUnacked} replayed`);
  }
  for (let k = n; ; k++) {
    const outcome = store.commit(plan.step(k));
    if (outcome.replayed || JSON.stringify(outcome.outcomes) !== plan.outcomes(k)) {
      throw new Error(`step ${k}: unexpected outcome ${JSON.stringify(outcome)}`);
    }
    say(`ack ${k} ${k === firstUnacked && requestId(k) !== undefined ? 'resent' : 'new'}`);
    // Now and then back to the event loop, as a real writer is, so that kills also land there.
    if (k % 4 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
}

async function hold() {
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const expect = async (word) => {
    const { value } = await lines.next();
    if (value !== word) throw new Error(`expected ${word} on stdin, got ${value}`);
  };
  say('ready');
  await expect('go');
  let store;
  try {
    store = await RunStoreCore.open(name, { persistence: 'file', directory });
    say(store.persistence === 'file' ? 'won' : `error persistence ${store.persistence}`);
  } catch (error) {
    say(`error ${error.code ?? error}`);
    return;
  }
  await expect('close');
  await store.close();
  say('closed');
}

await init();
if (mode === 'write') {
  const [seed, durability, acked] = rest;
  await write(Number(seed), durability, acked === undefined ? undefined : Number(acked));
} else if (mode === 'hold') {
  await hold();
  process.exit(0); // stdin stays open: do not wait for it
} else {
  throw new Error(`unknown mode ${mode}`);
}
