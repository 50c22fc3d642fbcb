// runstore/workflow as a TypeScript app writes it, type-checked with `strict` against the
// shipped .d.ts (scripts/build-test-app.sh runs tsc on it; nothing here runs).
import { RunStore, RunStoreError } from 'runstore';
import { defineWorkflow, FatalError, WorkflowEngine, type WorkflowDescription } from 'runstore/workflow';

interface Quote {
  sku: string;
  cents: number;
}

export const order = defineWorkflow('order', async (ctx, input: { sku: string }) => {
  const quote: Quote = await ctx.step('quote', ({ idempotencyKey, attempt, signal }) => {
    signal.throwIfAborted();
    return { sku: input.sku, cents: idempotencyKey.length * attempt };
  }, { retry: { maxAttempts: 5, initialIntervalMs: 100 }, once: false });
  await ctx.sleep('cool-off', 1_000);
  await ctx.sleepUntil('tomorrow', ctx.now() + 86_400_000);
  const approval = await ctx.waitForSignal<{ by: string }>('approve', { timeoutMs: 60_000 });
  const shipped = await ctx.child(shipment, { id: `${ctx.workflowId}/ship`, input: quote });
  const { workflowId } = await ctx.startChild(shipment, { input: quote });
  if (ctx.patched('audit')) {
    await ctx.step('audit', ({ write }) => write({ op: 'scheduleTimer', workflowId, timerId: 'audit', fireAt: ctx.now() }));
  }
  try {
    await ctx.step('charge', () => {
      throw new FatalError('declined');
    }, { once: true });
  } catch (error) {
    if (error instanceof RunStoreError && error.code === 'STEP_FAILED') void error.cause;
  }
  if (ctx.random() > 2) return ctx.continueAsNew({ sku: ctx.uuid() });
  return { quote, approvedBy: approval?.by ?? null, tracking: shipped.tracking };
});

export const shipment = defineWorkflow('shipment', async (ctx, quote: Quote) => ({ tracking: `${ctx.runId}-${quote.sku}` }));

export async function typedEngine(): Promise<WorkflowDescription> {
  const store = await RunStore.open('shop');
  const engine = await WorkflowEngine.start(store, {
    workflows: [order, shipment],
    onError: (error, { workflowId }) => console.error(error.code, workflowId),
  });
  const run = await engine.start(order, { id: 'order-42', input: { sku: 'A1' } });
  const { duplicate } = await run.signal('approve', { by: 'ana' }, { signalId: 'click-1' });
  const result = await run.result({ signal: AbortSignal.timeout(60_000) });
  const tracking: string = result.tracking;
  await engine.cancel('order-42', { reason: String(duplicate) + tracking });
  const again = await run.retry({ input: { sku: 'A2' } });
  void (await engine.retry(again.workflowId)).workflowId;
  const running: boolean = engine.running;
  void running;
  await engine.stop();
  return engine.describe(run.workflowId);
}

// @ts-expect-error: a workflow's input is what its function takes.
export const wrongInput = (engine: WorkflowEngine) => engine.start(order, { input: { sku: 42 } });
