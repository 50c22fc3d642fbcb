// LangGraph's own conformance suite for checkpoint savers, unchanged, run on RunStoreSaver from
// the installed package. Each checkpointer the suite creates gets a store of its own, so no
// test sees another's threads. `vitest run` prints the suite's own pass count.
import { validate } from '@langchain/langgraph-checkpoint-validation';
import { openStore } from './src/node-store.js';
import { RunStoreSaver } from 'runstore/langgraph';

let opened = 0;

validate({
  checkpointerName: 'runstore',
  async createCheckpointer() {
    opened += 1;
    return new RunStoreSaver(await openStore(`validation-${opened}`));
  },
  async destroyCheckpointer(saver) {
    await saver.store.close();
  },
});
