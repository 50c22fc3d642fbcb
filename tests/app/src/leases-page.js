// runstore/workflow with leases in a page (tests/js/sync.test.mjs): the page's store
// (`window.store`, a RunStore on OPFS) runs `handover` runs only while its engine holds their
// leases on the sync server. The steps' bodies note which page ran them, so that the test can
// tell that no step ran on two devices.
import { defineWorkflow, WorkflowEngine } from 'runstore/workflow';

/** The bodies this page ran: `[step, device name]`. */
const calls = [];
let engine = null;
let name = null;

const handover = defineWorkflow('handover', async (ctx) => {
  const body = (step) => () => {
    calls.push([step, name]);
    return name;
  };
  const one = await ctx.step('one', body('one'));
  await ctx.sleep('gap', 3_000);
  const two = await ctx.step('two', body('two'));
  return { one, two };
});

/** Starts this page's engine, named `deviceName`, with leases on `target` ({ url, token, namespace }). */
export async function startEngine(deviceName, target, ttlMs) {
  name = deviceName;
  engine = await WorkflowEngine.start(window.store, { workflows: [handover], leases: { ...target, ttlMs }, onError: () => {} });
  return engine.device;
}

export const startRun = async (id) => (await engine.start('handover', { id })).workflowId;
export const describe = (id) => engine.describe(id);
export const result = (id) => engine.result(id);
/** One pass of `store.sync` under the engine's leases. */
export const sync = async (target) => (await window.store.sync({ ...target, leases: engine.leases })).conflicts.map((e) => e.code);
export const stop = () => engine?.stop();
export const ranHere = () => calls;
export const summary = (id) => window.store.workflowSummary(id);
