// The services the workflows call, simulated (see world.js): each answers after its latency,
// and `perform(request, callNumber)` returns its answer or throws its error. Two are flaky and
// one is gone for good, so that retries show; the mail server has no idempotency keys.

import { callService } from './world.js';

class ServiceError extends Error {}

export function hash(text) {
  let h = 2166136261;
  for (const c of text) h = Math.imul(h ^ c.codePointAt(0), 16777619) >>> 0;
  return h.toString(36);
}

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
    // Gone for good: every attempt fails.
    perform: ({ channel }) => {
      throw new ServiceError(`HTTP 410: pager channel ${channel} was archived`);
    },
  },
  'email.send': {
    latencyMs: 1500,
    // A mail server takes no idempotency key: a message sent again is a second message.
    idempotent: false,
    perform: ({ to, subject }) => ({ messageId: `msg-${hash(to + subject)}`, to }),
  },
  'payments.charge': {
    latencyMs: 1200,
    perform: ({ order, amountCents }) => ({ chargeId: `ch_${hash(order)}`, amountCents }),
  },
  'payments.refund': {
    latencyMs: 1200,
    // Refunds what was charged for the order, if anything was.
    perform: ({ order }) => ({ refundId: `re_${hash(order)}` }),
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

/** Calls service `name` with `args` under an idempotency key. */
export function callTool(name, key, args) {
  const service = SERVICES[name];
  if (!service) throw new Error(`unknown service ${name}`);
  return callService(name, key, args, service);
}
