// A LangGraph.js agent for the tests: a scripted chat model (@langchain/core's
// FakeStreamingChatModel, no network) that calls tools, and a tool node whose calls go through
// runEffectOnce, so a graph resumed from its checkpoint never performs a completed call again.
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph/web';
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { RunStoreSaver, runEffectOnce } from 'runstore/langgraph';

/** What the model answers on its n-th turn: tool calls, then a final answer. */
export const SCRIPT = [
  { content: 'Looking up the weather.', tool_calls: [{ id: 'call-weather', name: 'weather', args: { city: 'Lyon' } }] },
  { content: 'Converting the temperature.', tool_calls: [{ id: 'call-convert', name: 'convert', args: { celsius: 21 } }] },
  {
    content: 'Booking and notifying.',
    tool_calls: [
      { id: 'call-book', name: 'book', args: { what: 'picnic' } },
      { id: 'call-notify', name: 'notify', args: { to: 'ada' } },
    ],
  },
  { content: 'Done: a picnic in Lyon at 70 °F, booked, and Ada knows.', tool_calls: [] },
];

/** Every tool call the script makes, as { id, name }. */
export const TOOL_CALLS = SCRIPT.flatMap((turn) => turn.tool_calls.map(({ id, name }) => ({ id, name })));

export const TOOLS = {
  weather: ({ city }) => ({ city, celsius: 21 }),
  convert: ({ celsius }) => ({ fahrenheit: Math.round((celsius * 9) / 5 + 32) }),
  book: ({ what }) => ({ booked: what }),
  notify: ({ to }) => ({ notified: to }),
};

/**
 * The compiled graph, checkpointed by a RunStoreSaver on `store`. `perform(name, args, key)`
 * is the outside world a tool call reaches (it defaults to TOOLS); `onOutcomeUnknown` decides
 * a call cut off after it started.
 */
export function buildAgent(store, { perform = (name, args) => TOOLS[name](args), onOutcomeUnknown } = {}) {
  const model = async (state) => {
    const turn = state.messages.filter((message) => AIMessage.isInstance(message)).length;
    const { content, tool_calls } = SCRIPT[turn];
    const scripted = new FakeStreamingChatModel({
      responses: [new AIMessage(content)],
      chunks: [new AIMessageChunk({ content: '', tool_calls: tool_calls.map((call) => ({ ...call, type: 'tool_call' })) })],
    });
    return { messages: [await scripted.invoke(state.messages)] };
  };
  const tools = async (state, config) => {
    const thread = config.configurable.thread_id;
    const last = state.messages.at(-1);
    const messages = await Promise.all(
      last.tool_calls.map(async (call) => {
        const idempotencyKey = `${thread}/${call.id}`;
        const output = await runEffectOnce(
          store,
          { capabilityId: `tool.${call.name}`, idempotencyKey, request: call.args, onOutcomeUnknown },
          () => perform(call.name, call.args, idempotencyKey),
        );
        return new ToolMessage({ content: JSON.stringify(output), tool_call_id: call.id, name: call.name });
      }),
    );
    return { messages };
  };
  const route = (state) => (state.messages.at(-1).tool_calls?.length ? 'tools' : END);
  return new StateGraph(MessagesAnnotation)
    .addNode('model', model)
    .addNode('tools', tools)
    .addEdge(START, 'model')
    .addConditionalEdges('model', route, ['tools', END])
    .addEdge('tools', 'model')
    .compile({ checkpointer: new RunStoreSaver(store) });
}

/**
 * Runs the thread to its end: from the start when it has no checkpoint, else from its last
 * checkpoint (LangGraph resumes a thread invoked with no input). Resolves to
 * { resumedFrom, messages }.
 */
export async function runThread(graph, threadId, question = 'Plan a picnic.') {
  const config = { configurable: { thread_id: threadId } };
  const before = await graph.getState(config);
  const resumedFrom = before.config?.configurable?.checkpoint_id ?? null;
  const input = resumedFrom ? null : { messages: [new HumanMessage(question)] };
  const final = await graph.invoke(input, config);
  return { resumedFrom, messages: final.messages.map((message) => ({ type: message.getType(), content: message.content })) };
}
