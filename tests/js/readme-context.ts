// What the snippets of the README and the docs take as given, declared with the types an app
// has, so that tsc checks each snippet as it would in that app (tests/js/readme-types.mjs copies
// this file beside them). Never run.
import { MessagesAnnotation, StateGraph } from '@langchain/langgraph';
import type { HumanMessage, ToolCall } from '@langchain/core/messages';
import type * as runstore from 'runstore';
import type { WorkflowEngine } from 'runstore/workflow';

/** A LangGraph.js graph as an app builds it, not compiled yet. */
const built = new StateGraph(MessagesAnnotation)
  .addNode('agent', async () => ({ messages: [] }))
  .addEdge('__start__', 'agent');

declare global {
  /** The package's client, which a snippet uses without repeating its import. */
  const RunStore: typeof runstore.RunStore;
  /** A store the app opened (the snippets after the quick start use one). */
  const store: runstore.RunStore;
  /** A sync server's bearer token. */
  const token: string;
  /** runstore/workflow: the app's engine (started with `leases` where a snippet needs them), and a run's id. */
  const engine: WorkflowEngine;
  const workflowId: string;
  /** LangGraph.js: the app's graph, a question for it, a tool call of its model, and the tool. */
  const workflow: typeof built;
  const question: HumanMessage;
  const toolCall: ToolCall;
  function sendEmail(request: runstore.Json): Promise<{ sent: boolean }>;
}
