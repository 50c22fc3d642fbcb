// The third workflow kind: a LangGraph.js agent (a StateGraph with a scripted chat model from
// @langchain/core's testing utilities, no network) checkpointed by runstore/langgraph's
// RunStoreSaver in the same store. Its tool calls go to the simulated services through the
// effect ledger (runEffectOnce), keyed by thread and tool-call id, so the effects card shows
// them and a reload never performs one twice: the leader tab resumes each unfinished thread
// from its last checkpoint. The "LangGraph agents" card lists each thread's checkpoints (step,
// source, pending writes) from the saver.
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph/web';
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { RunStoreSaver, runEffectOnce } from 'runstore/langgraph';
import { html } from './html.js';
import { callService } from './world.js';

const THREADS_KEY = 'runstore-demo:langgraph-threads';
const LATENCY_MS = 1200;

/** What the scripted model answers on its n-th turn. */
const SCRIPT = [
  { content: 'I will look up the forecast.', tool_calls: [{ id: 'forecast', name: 'weather.forecast', args: { city: 'Lyon' } }] },
  {
    content: 'Sunny: booking a table and telling the team.',
    tool_calls: [
      { id: 'book', name: 'bookings.reserve', args: { place: 'Parc de la Tête d’Or', people: 6 } },
      { id: 'tell', name: 'chat.post', args: { channel: '#team', text: 'Picnic on Saturday!' } },
    ],
  },
  { content: 'Done: Saturday picnic booked for six, and the team knows.', tool_calls: [] },
];

const SERVICES = {
  'weather.forecast': ({ city }) => ({ city, sky: 'sunny', celsius: 24 }),
  'bookings.reserve': ({ place, people }) => ({ booking: `B-${people}-${place.length}`, place }),
  'chat.post': ({ channel }) => ({ posted: channel }),
};

export class LangGraphAgents {
  #store;
  #saver;
  #graph;
  #running = new Set();
  #card;

  constructor(store, card) {
    this.#store = store;
    this.#card = card;
    this.#saver = new RunStoreSaver(store);
    this.#graph = this.#build();
  }

  #build() {
    const model = async (state) => {
      const turn = state.messages.filter((m) => AIMessage.isInstance(m)).length;
      const { content, tool_calls } = SCRIPT[turn];
      const scripted = new FakeStreamingChatModel({
        responses: [new AIMessage(content)],
        chunks: [new AIMessageChunk({ content: '', tool_calls: tool_calls.map((c) => ({ ...c, type: 'tool_call' })) })],
      });
      return { messages: [await scripted.invoke(state.messages)] };
    };
    const tools = async (state, config) => {
      const thread = config.configurable.thread_id;
      const calls = state.messages.at(-1).tool_calls;
      const messages = await Promise.all(
        calls.map(async (call) => {
          const key = `${thread}/${call.id}`;
          const send = () => callService(call.name, key, call.args, { latencyMs: LATENCY_MS, perform: SERVICES[call.name] });
          // Cut off by a reload after it started: the service applies a key once, so asking
          // again under the same key is safe and returns its answer.
          const output = await runEffectOnce(this.#store, { capabilityId: call.name, idempotencyKey: key, request: call.args, onOutcomeUnknown: send }, send);
          return new ToolMessage({ content: JSON.stringify(output), tool_call_id: call.id, name: call.name });
        }),
      );
      return { messages };
    };
    return new StateGraph(MessagesAnnotation)
      .addNode('model', model)
      .addNode('tools', tools)
      .addEdge(START, 'model')
      .addConditionalEdges('model', (s) => (s.messages.at(-1).tool_calls?.length ? 'tools' : END), ['tools', END])
      .addEdge('tools', 'model')
      .compile({ checkpointer: this.#saver });
  }

  /** Starts a new agent thread (in the leader tab; a follower's click runs there too, by the store). */
  async start() {
    const thread = `agent-${Date.now().toString(36)}`;
    const threads = JSON.parse(localStorage.getItem(THREADS_KEY) ?? '[]');
    localStorage.setItem(THREADS_KEY, JSON.stringify([...threads, thread]));
    this.#run(thread, { messages: [new HumanMessage('Plan a picnic for the team this weekend.')] });
    return thread;
  }

  /** Resumes every thread whose graph has a next node, from its last checkpoint; resolves to how many. */
  async resume() {
    let resumed = 0;
    for (const thread of await this.threads()) {
      const state = await this.#graph.getState({ configurable: { thread_id: thread } });
      if (state.next.length > 0) {
        this.#run(thread, null);
        resumed++;
      }
    }
    return resumed;
  }

  #run(thread, input) {
    if (this.#running.has(thread)) return;
    this.#running.add(thread);
    this.#graph
      .invoke(input, { configurable: { thread_id: thread } })
      .catch((error) => console.error(`LangGraph agent ${thread}:`, error))
      .finally(() => {
        this.#running.delete(thread);
        this.render();
      });
  }

  /** A thread's checkpoints, newest first (what `graph.getStateHistory` reads). */
  saverList(thread) {
    return this.#saver.list({ configurable: { thread_id: thread } });
  }

  /** Every thread the saver holds. */
  async threads() {
    const seen = new Set();
    for await (const tuple of this.#saver.list({}, { limit: 1000 })) seen.add(tuple.config.configurable.thread_id);
    return [...seen].sort();
  }

  async render() {
    const rows = [];
    for (const thread of await this.threads()) {
      const history = [];
      for await (const tuple of this.#saver.list({ configurable: { thread_id: thread } })) history.push(tuple);
      const state = await this.#graph.getState({ configurable: { thread_id: thread } });
      const last = state.values.messages?.at(-1);
      rows.push({ thread, history, next: state.next, answer: state.next.length === 0 ? last?.content : null });
    }
    this.#card.innerHTML = html`
      <h2>LangGraph agents <small>runstore/langgraph · checkpoints in the store</small></h2>
      ${rows.length === 0 ? html`<p class="empty">none yet: start one</p>` : ''}
      ${rows.map(
        (r) => html`<div class="lg-thread" data-thread="${r.thread}" data-status="${r.next.length ? 'running' : 'done'}" data-checkpoints="${r.history.length}">
          <h3><code>${r.thread}</code> · ${r.next.length ? `next: ${r.next.join(', ')}` : 'done'} · ${r.history.length} checkpoints</h3>
          ${r.answer ? html`<p class="lg-answer">${r.answer}</p>` : ''}
          <ol class="lg-checkpoints">${r.history.slice(0, 8).map(
            (t) => html`<li><code>${t.checkpoint.id.slice(0, 13)}…</code> step ${t.metadata?.step} · ${t.metadata?.source}${
              t.pendingWrites?.length ? html` · writes: ${t.pendingWrites.map(([task, channel]) => `${channel}←${task.slice(0, 6)}`).join(', ')}` : ''
            }</li>`,
          )}</ol>
        </div>`,
      )}`;
  }
}
