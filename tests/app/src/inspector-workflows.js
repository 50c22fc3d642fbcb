// The workflow tests/js/inspector.test.mjs inspects: a charge whose first attempt fails (a
// retry on a durable timer), a durable sleep, a wait for the signal `approve`, and a step that
// stores a label (an artifact) with its result.
import { defineWorkflow } from 'runstore/workflow';

const encoder = new TextEncoder();

export const approval = defineWorkflow('approval', async (ctx, { amount }) => {
  const charge = await ctx.step(
    'charge',
    ({ attempt }) => {
      if (attempt === 1) throw new Error('the card network is busy');
      return { charged: amount };
    },
    { retry: { initialIntervalMs: 100 } },
  );
  await ctx.sleep('cool-off', 100);
  const approved = await ctx.waitForSignal('approve', { timeoutMs: 600_000 });
  const label = await ctx.step('ship', ({ write }) => {
    const text = `ship ${amount} to ${approved?.by ?? 'nobody'}`;
    write({ op: 'putArtifact', artifact: { scope: ctx.workflowId, mediaType: 'text/plain', name: 'label.txt', bytes: encoder.encode(text) }, now: Date.now() });
    return { label: text };
  });
  return { charge, label, approvedBy: approved?.by ?? null };
});
