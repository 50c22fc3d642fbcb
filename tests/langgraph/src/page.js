// A page that runs the test agent on a thread (?thread=, default "a") on the shared OPFS store,
// from its last checkpoint when the thread has one: reload it mid-run and it resumes. Tool calls
// reach a simulated service in localStorage that counts, per idempotency key, the requests it
// received and the times it applied one (it applies a key once, as payment APIs do).
// `window.agent` tells the test what happened.
import { RunStore } from 'runstore';
import { RunStoreSaver } from 'runstore/langgraph';
import { TOOLS, buildAgent, runThread } from './agent.js';

const params = new URLSearchParams(location.search);
const thread = params.get('thread') ?? 'a';
const toolMs = Number(params.get('toolMs') ?? 0);
const agent = (window.agent = { thread, done: false, resumedFrom: null, messages: null, error: null, unknown: [] });

const world = {
  read: (key) => JSON.parse(localStorage.getItem(`world:${key}`) ?? '{"requests":0,"applied":0,"answer":null}'),
  async call(name, args, key) {
    const entry = world.read(key);
    entry.requests += 1;
    localStorage.setItem(`world:${key}`, JSON.stringify(entry));
    await new Promise((resolve) => setTimeout(resolve, toolMs));
    if (entry.applied === 0) {
      entry.applied = 1;
      entry.answer = TOOLS[name](args);
      localStorage.setItem(`world:${key}`, JSON.stringify(entry));
    }
    return entry.answer;
  },
};
window.world = world;

try {
  const store = await RunStore.open('langgraph-page', { persistence: 'opfs' });
  window.store = store;
  window.saver = new RunStoreSaver(store);
  const graph = buildAgent(store, {
    perform: world.call,
    // A call cut off by a reload: ask the service again under the same key (it applied the
    // key at most once, and answers a repeat with its first answer).
    onOutcomeUnknown: (record) => {
      agent.unknown.push(record.idempotencyKey);
      const name = record.capabilityId.replace(/^tool\./, '');
      return world.call(name, record.request, record.idempotencyKey);
    },
  });
  const { resumedFrom, messages } = await runThread(graph, thread);
  Object.assign(agent, { resumedFrom, messages, done: true });
} catch (error) {
  agent.error = `${error?.code ?? ''} ${error?.message ?? error}`;
  console.error(error);
}
document.getElementById('status').textContent = JSON.stringify(agent, null, 2);
