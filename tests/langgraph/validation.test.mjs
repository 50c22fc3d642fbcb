// LangGraph's own conformance suite for checkpoint savers, unchanged, run on RunStoreSaver from
// the installed package. Each checkpointer the suite creates gets a store of its own, so no
// test sees another's threads. `vitest run` prints the suite's own pass count.
import { validate } from '@langchain/langgraph-checkpoint-validation';
import { saverInitializer } from './src/node-store.js';

validate(saverInitializer('validation'));
