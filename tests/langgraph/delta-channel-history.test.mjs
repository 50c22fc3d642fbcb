// The validation package's opt-in suite (not part of `validate`): LangGraph's walk that
// rebuilds delta channels from ancestors' writes, on RunStoreSaver's stored writes and order.
import { deltaChannelHistoryTests } from '@langchain/langgraph-checkpoint-validation';
import { saverInitializer } from './src/node-store.js';

deltaChannelHistoryTests(saverInitializer('delta'));
