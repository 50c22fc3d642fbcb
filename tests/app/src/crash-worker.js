// The browser crash test's store worker, through `runstore/core` on OPFS (or the medium the
// page names, see medium.js).
// { mode: 'write', seed, acked, medium }: checks the store the terminated writer left (posting
//   { checked: { n, problems } }), re-sends the first unacknowledged step under its request id,
//   then commits step after step, posting { ack, how } after each commit is stored (`flush`:
//   at once on OPFS, a write to IndexedDB there), until the page terminates it.
// { mode: 'check', seed }: checks the store and posts { checked: { n, problems } }.
// With `key` (an array of 32 bytes) the store is another one, encrypted with that key.
import { init, RunStoreCore } from 'runstore/core';
import { onMedium } from './medium.js';
import { Plan, requestId } from './crash-plan.js';
import { check, committedSteps } from './crash-check.js';

const NAME = 'crash-steps';

/** Opens the store, backing off while the terminated writer still holds it. */
async function openRetrying(medium, key) {
  const name = key ? `${NAME}-encrypted` : NAME;
  const options = key ? { persistence: 'opfs', key: new Uint8Array(key) } : { persistence: 'opfs' };
  let wait = 10;
  for (let attempt = 1; ; attempt++) {
    try {
      return await RunStoreCore.open(name, onMedium(options, medium));
    } catch (error) {
      if (error.code !== 'BUSY' || attempt === 30) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, 500);
    }
  }
}

async function write(store, plan, n, acked) {
  const firstUnacked = acked === null ? 0 : acked + 1;
  if (firstUnacked < n && requestId(firstUnacked) !== undefined) {
    const outcome = store.commit(plan.step(firstUnacked));
    if (!outcome.replayed) throw new Error(`step ${firstUnacked} applied twice`);
    await store.flush();
    self.postMessage({ ack: firstUnacked, how: 'replayed' });
  }
  for (let k = n; ; k++) {
    const outcome = store.commit(plan.step(k));
    if (outcome.replayed || JSON.stringify(outcome.outcomes) !== plan.outcomes(k)) {
      throw new Error(`step ${k}: unexpected outcome ${JSON.stringify(outcome)}`);
    }
    const resent = k === firstUnacked && requestId(k) !== undefined;
    await store.flush();
    self.postMessage({ ack: k, how: resent ? 'resent' : 'new' });
    // Back to the event loop, so that terminate() lands between commits as well as in them.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

self.onmessage = async ({ data }) => {
  try {
    await init();
    const store = await openRetrying(data.medium, data.key);
    const plan = new Plan(data.seed);
    const n = committedSteps(store);
    const checked = { n, problems: check(store, plan, n) };
    if (data.mode === 'check') await store.close();
    self.postMessage({ checked });
    if (data.mode === 'write') await write(store, plan, n, data.acked);
  } catch (error) {
    self.postMessage({ failed: `${error}\n${error?.stack ?? ''}` });
  }
};
