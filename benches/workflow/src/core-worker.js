// runstore/core in an app's own dedicated worker, on OPFS: the engine and the hand-written
// commits run here, beside their store, one measurement per message.
import { init, RunStoreCore } from 'runstore/core';
import { engineSide, handSide, measure } from './workload.js';

const ready = init();
const SIDES = { engine: engineSide, hand: handSide };

self.onmessage = async ({ data: { id, kind, durability, count, lanes, name } }) => {
  try {
    await ready;
    const store = await RunStoreCore.open(name, { persistence: 'opfs', durability });
    try {
      const side = await SIDES[kind](store);
      const result = await measure(side.runOne, { count, lanes, prefix: name });
      await side.close();
      self.postMessage({ id, result });
    } finally {
      await store.close();
    }
  } catch (error) {
    self.postMessage({ id, error: `${error?.code ?? ''} ${error?.stack ?? error}` });
  }
};
