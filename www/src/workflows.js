// The sample workflows, as data: a list of steps each. The runner (runner.js) gives every kind
// of step its durable meaning:
//   tool       a side effect performed inline, under the idempotency key `<workflow>/<step>`;
//   activities activities dispatched through the outbox, with retries and a dead letter;
//   timer      a durable timer: the workflow sleeps, across reloads;
//   artifact   a file the workflow produces, stored once under an idempotency key.
// Steps read the workflow's state (`s.input`, `s.outputs[stepId]`); what they compute must
// depend on that state alone, so that a step redone after a reload asks for the same thing.

import { callService } from './world.js';

/** Retry policy of outbox activities: attempts in all, and the delay before attempt n+1. */
export const ACTIVITY_ATTEMPTS = 3;
export const retryDelayMs = (attempt) => 500 * (attempt + 1);

class ServiceError extends Error {}

function hash(text) {
  let h = 2166136261;
  for (const c of text) h = Math.imul(h ^ c.codePointAt(0), 16777619) >>> 0;
  return h.toString(36);
}

// The services the workflows call. `perform` runs inside the service (see world.js): it returns
// the answer or throws the service's error.
const SERVICES = {
  'llm.plan': {
    latencyMs: 1200,
    perform: ({ topic }) => ({
      plan: [`search the web for "${topic}"`, `read the primary source on ${topic}`, 'summarise for the team'],
    }),
  },
  'llm.summarize': {
    latencyMs: 1200,
    perform: ({ topic, sources }) => ({
      summary: `${topic}: ${sources} sources agree on the essentials; details in the report.`,
    }),
  },
  'search.web': {
    latencyMs: 1500,
    perform: ({ query }) => ({
      hits: [1, 2, 3].map((n) => ({ title: `${query} (${n})`, url: `https://example.org/${hash(query + n)}` })),
    }),
  },
  'docs.fetch': {
    latencyMs: 1500,
    // Flaky: the first request of each key times out at the gateway; the retry succeeds.
    perform: ({ url }, call) => {
      if (call === 1) throw new ServiceError('HTTP 503 from docs gateway (try again)');
      return { url, words: 1200 + (parseInt(hash(url), 36) % 800) };
    },
  },
  'pager.notify': {
    latencyMs: 600,
    // Always fails: every attempt ends in the outbox's dead letter.
    perform: ({ channel }) => {
      throw new ServiceError(`HTTP 410: pager channel ${channel} was archived`);
    },
  },
  'email.send': {
    latencyMs: 1200,
    perform: ({ to, subject }) => ({ messageId: `msg-${hash(to + subject)}`, to }),
  },
  'payments.charge': {
    latencyMs: 1200,
    perform: ({ order, amountCents }) => ({ chargeId: `ch_${hash(order)}`, amountCents }),
  },
  'warehouse.reserve': {
    latencyMs: 1500,
    perform: ({ sku }) => ({ bin: `${sku.slice(0, 1).toUpperCase()}-${parseInt(hash(sku), 36) % 40}` }),
  },
  'shipping.book': {
    latencyMs: 1500,
    perform: ({ order }, call) => {
      if (call === 1) throw new ServiceError('HTTP 503 from carrier API (try again)');
      return { tracking: `TRK${hash(order).toUpperCase()}` };
    },
  },
};

/** Calls a service under an idempotency key (what a tool or an activity does). */
export function callTool(capability, key, args) {
  const service = SERVICES[capability];
  if (!service) throw new Error(`unknown service ${capability}`);
  return callService(capability, key, args, service);
}

const TOPICS = ['OPFS durability', 'idempotency keys', 'the outbox pattern', 'durable timers', 'WAL on sahpool'];
const SKUS = ['kettle', 'lamp', 'chair', 'desk'];

export const WORKFLOWS = {
  'research-agent': {
    title: 'Research agent',
    describe: (input) => input.topic,
    input: (n) => ({ topic: TOPICS[n % TOPICS.length] }),
    steps: [
      { id: 'plan', kind: 'tool', tool: 'llm.plan', args: (s) => ({ topic: s.input.topic }) },
      {
        id: 'gather',
        kind: 'activities',
        activities: (s) => [
          { name: 'search', type: 'search.web', input: { query: s.input.topic } },
          { name: 'fetch', type: 'docs.fetch', input: { url: `https://example.org/spec/${hash(s.input.topic)}` } },
          { name: 'notify', type: 'pager.notify', input: { channel: '#research-archive' }, optional: true },
        ],
      },
      { id: 'cool-down', kind: 'timer', ms: 3000, why: 'rate limit of the model API' },
      {
        id: 'summarize',
        kind: 'tool',
        tool: 'llm.summarize',
        args: (s) => ({ topic: s.input.topic, sources: s.outputs.gather.search.hits.length + 1 }),
      },
      {
        id: 'report',
        kind: 'artifact',
        name: 'report.md',
        mediaType: 'text/markdown',
        content: (s) =>
          [
            `# ${s.input.topic}`,
            '',
            s.outputs.summarize.summary,
            '',
            '## Plan',
            ...s.outputs.plan.plan.map((p) => `- ${p}`),
            '',
            '## Sources',
            ...s.outputs.gather.search.hits.map((h) => `- [${h.title}](${h.url})`),
            `- ${s.outputs.gather.fetch.url} (${s.outputs.gather.fetch.words} words)`,
          ].join('\n'),
      },
      {
        id: 'email',
        kind: 'tool',
        tool: 'email.send',
        args: (s) => ({ to: 'team@example.org', subject: `Research: ${s.input.topic}` }),
      },
    ],
  },
  'order-fulfilment': {
    title: 'Order fulfilment',
    describe: (input) => `${input.sku} · ${(input.amountCents / 100).toFixed(2)} EUR`,
    input: (n) => ({ order: `order-${1001 + n}`, sku: SKUS[n % SKUS.length], amountCents: 1990 + 500 * n }),
    steps: [
      {
        id: 'charge',
        kind: 'tool',
        tool: 'payments.charge',
        args: (s) => ({ order: s.input.order, amountCents: s.input.amountCents }),
      },
      {
        id: 'ship',
        kind: 'activities',
        activities: (s) => [
          { name: 'reserve', type: 'warehouse.reserve', input: { sku: s.input.sku } },
          { name: 'book', type: 'shipping.book', input: { order: s.input.order } },
        ],
      },
      { id: 'pickup-window', kind: 'timer', ms: 4000, why: 'wait for the carrier pickup' },
      {
        id: 'receipt',
        kind: 'artifact',
        name: 'receipt.txt',
        mediaType: 'text/plain',
        content: (s) =>
          [
            `Receipt for ${s.input.order}`,
            `${s.input.sku}: ${(s.input.amountCents / 100).toFixed(2)} EUR (charge ${s.outputs.charge.chargeId})`,
            `Shipped from bin ${s.outputs.ship.reserve.bin}, tracking ${s.outputs.ship.book.tracking}`,
          ].join('\n'),
      },
      {
        id: 'confirm',
        kind: 'tool',
        tool: 'email.send',
        args: (s) => ({ to: 'customer@example.org', subject: `Your ${s.input.sku} is on its way (${s.input.order})` }),
      },
    ],
  },
};

/** A new workflow id: the type's first word and a random suffix (`research-1a2b3c`). */
export function newWorkflowId(type) {
  return `${type.split('-')[0]}-${crypto.randomUUID().slice(0, 6)}`;
}

/** The type of a workflow, from its id. */
export function workflowTypeOf(workflowId) {
  const prefix = workflowId.split('-')[0];
  return Object.keys(WORKFLOWS).find((type) => type.split('-')[0] === prefix) ?? null;
}

/** Where the effect under `key` (`<workflow>/<step>[/<activity>]`) comes in its workflow, to sort by. */
export function stepOrder(key) {
  const [workflowId, step] = key.split('/');
  const steps = WORKFLOWS[workflowTypeOf(workflowId)]?.steps ?? [];
  return steps.findIndex((s) => s.id === step);
}
