// The validation package's opt-in suite (not part of `validate`): LangGraph's walk that
// rebuilds delta channels from ancestors' writes, on RunStoreSaver's stored writes and order.
import { deltaChannelHistoryTests } from '@langchain/langgraph-checkpoint-validation';
import { openStore } from './src/node-store.js';
import { RunStoreSaver } from 'runstore/langgraph';

let opened = 0;

deltaChannelHistoryTests({
  checkpointerName: 'runstore',
  async createCheckpointer() {
    opened += 1;
    return new RunStoreSaver(await openStore(`delta-${opened}`));
  },
  async destroyCheckpointer(saver) {
    await saver.store.close();
  },
});
