// The demo's two workflows, as code on runstore/workflow. Each call to a service is a step: the
// engine records its result, and when the page comes back the function runs again from the
// top and gets the recorded results instead of calling again. A step cut off by a reload runs
// again (the next attempt) under the same idempotency key, which the service keeps once; a `once` step
// is never run twice. Timers and the wait for an approval are durable: they outlive the tab.

import { defineWorkflow } from 'runstore/workflow';
import { callTool, hash } from './services.js';

/** A service call as a step named after the service; the service gets the step's idempotency key. */
const call = (ctx, service, args, options) =>
  ctx.step(service, ({ idempotencyKey }) => callTool(service, idempotencyKey, args), options);

/**
 * Flaky services are tried up to five times, a second, two, four and eight seconds apart
 * (durable timers). An attempt a reload cut off counts as one, so a reload or two do not use
 * them up.
 */
const RETRIED = { retry: { maxAttempts: 5, initialIntervalMs: 1000 } };

/** The pager is given up on after three attempts (it is gone for good); the workflow does without it. */
const GIVEN_UP = { retry: { maxAttempts: 3, initialIntervalMs: 1000 } };

/** A step whose last failure the workflow can do without: null instead of STEP_FAILED. */
const optional = (step) =>
  step.catch((error) => {
    if (error.code !== 'STEP_FAILED') throw error;
    return null;
  });

/**
 * Sends an email once at most: the mail server takes no idempotency key. If the page went while
 * it was being sent, nobody knows whether it went (OUTCOME_UNKNOWN), and it is not sent again.
 */
async function emailOnce(ctx, message) {
  try {
    return await call(ctx, 'email.send', message, { once: true });
  } catch (error) {
    if (error.code !== 'OUTCOME_UNKNOWN') throw error;
    return { unknown: 'the page went while it was being sent: a person checks' };
  }
}

/** Stores a file in the same commit as the step's result: both or neither. */
const storeFile = (ctx, name, mediaType, lines) =>
  ctx.step(name, ({ idempotencyKey, write }) => {
    const bytes = new TextEncoder().encode(lines.join('\n'));
    write({ op: 'putArtifact', artifact: { scope: ctx.workflowId, name, mediaType, bytes, idempotencyKey }, now: Date.now() });
    return { name, sizeBytes: bytes.length };
  });

export const APPROVAL_TIMEOUT_MS = 10 * 60_000;

export const research = defineWorkflow('research-agent', async (ctx, { topic }) => {
  const { plan } = await call(ctx, 'llm.plan', { topic });
  const url = `https://example.org/spec/${hash(topic)}`;
  const [search, doc, paged] = await Promise.all([
    call(ctx, 'search.web', { query: topic }),
    call(ctx, 'docs.fetch', { url }, RETRIED),
    optional(call(ctx, 'pager.notify', { channel: '#research-archive' }, GIVEN_UP)),
  ]);
  await ctx.sleep('cool-down', 3000); // the model API's rate limit
  const { summary } = await call(ctx, 'llm.summarize', { topic, sources: search.hits.length + 1 });
  const report = await storeFile(ctx, 'report.md', 'text/markdown', [
    `# ${topic}`,
    '',
    summary,
    '',
    '## Plan',
    ...plan.map((p) => `- ${p}`),
    '',
    '## Sources',
    ...search.hits.map((h) => `- [${h.title}](${h.url})`),
    `- ${doc.url} (${doc.words} words)`,
  ]);
  // A person reads the report before it goes to the team (the Approve button sends the signal).
  const approval = await ctx.waitForSignal('approve', { timeoutMs: APPROVAL_TIMEOUT_MS });
  if (!approval) return { report, paged: paged !== null, email: 'not approved in time' };
  const email = await emailOnce(ctx, { to: 'team@example.org', subject: `Research: ${topic}` });
  return { report, paged: paged !== null, approvedBy: approval.by, email };
});

export const order = defineWorkflow('order-fulfilment', async (ctx, { order, sku, amountCents }) => {
  try {
    const charge = await call(ctx, 'payments.charge', { order, amountCents });
    const [reserve, shipping] = await Promise.all([
      call(ctx, 'warehouse.reserve', { sku }),
      call(ctx, 'shipping.book', { order }, RETRIED),
    ]);
    await ctx.sleep('pickup-window', 4000); // the carrier's pickup
    const receipt = await storeFile(ctx, 'receipt.txt', 'text/plain', [
      `Receipt for ${order}`,
      `${sku}: ${euros(amountCents)} (charge ${charge.chargeId})`,
      `Shipped from bin ${reserve.bin}, tracking ${shipping.tracking}`,
    ]);
    const email = await emailOnce(ctx, { to: 'customer@example.org', subject: `Your ${sku} is on its way (${order})` });
    return { charge: charge.chargeId, tracking: shipping.tracking, receipt, email };
  } catch (error) {
    // Cancelled (the Cancel button): a cleanup step gives the money back, then the run ends cancelled.
    if (error.code === 'CANCELLED') await call(ctx, 'payments.refund', { order });
    throw error;
  }
});

const euros = (cents) => `${(cents / 100).toFixed(2)} EUR`;
const TOPICS = ['OPFS durability', 'idempotency keys', 'the outbox pattern', 'durable timers', 'WAL on sahpool'];
const SKUS = ['kettle', 'lamp', 'chair', 'desk'];

/** What the page shows and starts of each workflow: a title, a line about its input, the n-th input. */
export const WORKFLOWS = {
  [research.name]: {
    workflow: research,
    title: 'Research agent',
    describe: (input) => input.topic,
    input: (n) => ({ topic: TOPICS[n % TOPICS.length] }),
  },
  [order.name]: {
    workflow: order,
    title: 'Order fulfilment',
    describe: (input) => `${input.sku} · ${euros(input.amountCents)}`,
    input: (n) => ({ order: `order-${1001 + n}`, sku: SKUS[n % SKUS.length], amountCents: 1990 + 500 * n }),
  },
};

/** A new workflow id: the type's first word and a random suffix (`research-1a2b3c`). */
export const newWorkflowId = (type) => `${type.split('-')[0]}-${crypto.randomUUID().slice(0, 6)}`;
