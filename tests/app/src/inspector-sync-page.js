// runstore/inspector on a sync server's namespace, for tests/js/inspector-sync.test.mjs. One
// page pushes: runstore/workflow runs `approval` workflows in its store and `store.sync` pushes
// them. Another shows the namespace with nothing but `syncServerStore` and
// <runstore-inspector>; its fetch is the page's own, counted, so that the test can tell
// whether the copy's long-poll is open.
import { RunStore } from 'runstore';
import { syncServerStore } from 'runstore/inspector';
import { WorkflowEngine } from 'runstore/workflow';
import { approval } from './inspector-workflows.js';

let pusher = null;

/** Resolves once `check()` is true (checked every 20 ms), or rejects after `ms`. */
async function until(check, what, ms = 15_000) {
  const end = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The names of the workflow's events in the pushing page's store, in order. */
export async function events(id) {
  return (await pusher.store.readHistory(id)).items.map((e) => (e.type === 'custom' ? e.name : e.type));
}

/** The pushing page: a memory store, its engine running `approval`, pushing to `target` ({ url, token, namespace }). */
export async function openPusher(target) {
  const store = await RunStore.open('inspector-sync-pusher', { persistence: 'memory' });
  const engine = await WorkflowEngine.start(store, { workflows: [approval] });
  pusher = { store, engine, target };
}

/** Starts each workflow, waits until each waits for its approval, pushes; resolves to what the pass pushed. */
export async function startAndPush(ids) {
  for (const id of ids) await pusher.engine.start(approval, { id, input: { amount: 100 } });
  for (const id of ids) await until(async () => (await events(id)).at(-1) === 'wait', `${id} waits for approve`);
  return (await pusher.store.sync(pusher.target)).pushed;
}

/** Approves workflow `id`, waits until it completed, pushes; resolves to what the pass pushed. */
export async function approveAndPush(id) {
  await pusher.engine.signal(id, 'approve', { by: 'ada' });
  await until(async () => (await events(id)).at(-1) === 'completed', `${id} completes`);
  return (await pusher.store.sync(pusher.target)).pushed;
}

/** Requests to the server not answered yet (the copy's long-poll among them). */
let open = 0;
async function countedFetch(...args) {
  open += 1;
  try {
    return await fetch(...args);
  } finally {
    open -= 1;
  }
}

/** The viewing page: a copy of the namespace (`{ url, token, namespace }`) and the inspector on it; resolves once it painted. */
export async function mountServer(options) {
  const store = await syncServerStore({ ...options, fetch: countedFetch });
  const element = document.createElement('runstore-inspector');
  element.store = store;
  document.body.append(element);
  await element.ready;
  window.serverView = { store, element, openRequests: () => open };
}

/** Hands the viewing page's inspector a new copy of the namespace; resolves once that copy's first pass synced. */
export async function replaceServer(options) {
  await window.serverView.store.stop();
  const store = await syncServerStore({ ...options, fetch: countedFetch });
  const synced = new Promise((resolve) => {
    const unsubscribe = store.subscribeSync((progress) => {
      if (progress.type !== 'synced') return;
      resolve();
      queueMicrotask(() => unsubscribe());
    });
  });
  window.serverView.element.store = store;
  window.serverView.store = store;
  await synced;
}
