// runstore/inspector as an app mounts it, for tests/js/inspector.test.mjs: a store (the page's
// client on the page's medium, runstore/core in the page, or runstore/core in an app's own
// worker served with exposeCore), runstore/workflow running `approval` workflows on it, and
// <runstore-inspector> on top. The test drives the element as a user would and reads the store
// to check what it shows.
import { RunStore } from 'runstore';
import { init, RunStoreCore } from 'runstore/core';
import { connectCore } from 'runstore/inspector';
import { WorkflowEngine } from 'runstore/workflow';
import { approval } from './inspector-workflows.js';

/**
 * Opens store `name` (`on`: `client`, `core` or `worker`), starts the engine and `count`
 * workflows `order-0`..., mounts the inspector and waits for its first paint. Resolves to
 * `{ isLeader, paintMs }`.
 */
export async function mount({ name, on = 'client', count = 0, persistence = 'opfs' }) {
  let store;
  let engine;
  if (on === 'worker') {
    const worker = new Worker(new URL('./inspector-worker.js', import.meta.url), { type: 'module' });
    await new Promise((resolve) => worker.addEventListener('message', ({ data }) => data === 'ready' && resolve(), { once: false }));
    ({ store, engine } = await connectCore(worker));
    window.worker = worker;
  } else {
    if (on === 'core') {
      await init();
      store = await RunStoreCore.open(name, { persistence: 'memory' });
    } else {
      store = await RunStore.open(name, { persistence });
    }
    engine = await WorkflowEngine.start(store, { workflows: [approval] });
    for (let i = 0; i < count; i++) await engine.start(approval, { id: `order-${i}`, input: { amount: 100 + i } });
  }
  const element = document.createElement('runstore-inspector');
  element.store = store;
  element.engine = engine;
  const started = performance.now();
  document.body.append(element);
  await element.ready;
  const paintMs = performance.now() - started;
  window.inspected = { store, engine, element, core: on === 'core' ? store : null };
  return { isLeader: store.isLeader ?? true, paintMs };
}

/** Starts workflow `id` through this page's engine. */
export async function start(id, amount = 1) {
  await window.inspected.engine.start(approval, { id, input: { amount } });
}

/**
 * Writes `count` visibility records (workflows as an index shows them, without journals) in
 * steps of 1000, as a store with that many workflows has.
 */
export async function seed(store, count) {
  const now = Date.now();
  const statuses = ['completed', 'completed', 'failed', 'running', 'cancelled'];
  for (let from = 0; from < count; from += 1000) {
    const operations = [];
    for (let i = from; i < Math.min(count, from + 1000); i++) {
      const status = statuses[i % statuses.length];
      operations.push({
        op: 'upsertVisibility',
        record: {
          workflowId: `bulk-${String(i).padStart(6, '0')}`,
          runId: `run-${i}`,
          workflowType: i % 3 ? 'order' : 'report',
          status,
          startTime: now - i * 1000,
          closeTime: status === 'running' ? null : now - i * 1000 + 500,
          failureReason: status === 'failed' ? 'the card was declined' : null,
          searchAttributes: { steps: i % 7, tenant: `t${i % 10}` },
        },
      });
    }
    await store.commit({ operations });
  }
}

/** A store with `count` workflows in a memory store, the inspector on it: paint and scroll times. */
export async function large(count) {
  const store = await RunStore.open(`large-${count}`, { persistence: 'memory' });
  const seeded = performance.now();
  await seed(store, count);
  const seedMs = performance.now() - seeded;
  const element = document.createElement('runstore-inspector');
  element.store = store;
  const started = performance.now();
  document.body.append(element);
  await element.ready;
  await frames(2);
  const paintMs = performance.now() - started;
  const root = element.shadowRoot;
  const list = root.querySelector('.vlist');
  const drawn = () => [...root.querySelectorAll('.row[data-workflow-id]')].map((r) => Number(r.dataset.index));
  // A jump (a drag of the scrollbar): how long until the rows there are drawn from the store.
  const jump = async (fraction) => {
    const t = performance.now();
    list.scrollTop = fraction * (list.scrollHeight - list.clientHeight);
    const target = Math.floor(list.scrollTop / (list.scrollHeight / count));
    for (;;) {
      await frames(1);
      if (drawn().includes(target)) break;
      if (performance.now() - t > 20_000) throw new Error(`row ${target} not drawn in 20 s`);
    }
    return performance.now() - t;
  };
  const middleMs = await jump(0.5);
  const endMs = await jump(1);
  // Scrolling by a wheel's steps (100 px a frame) through rows already read: each frame's time.
  list.scrollTop = 0;
  await jump(0);
  const gaps = [];
  let last = performance.now();
  for (let i = 0; i < 120; i++) {
    list.scrollTop += 100;
    await frames(1);
    const now = performance.now();
    gaps.push(now - last);
    last = now;
  }
  gaps.sort((a, b) => a - b);
  const line = root.querySelector('.line').textContent;
  element.remove();
  await store.close();
  return { seedMs, paintMs, middleMs, endMs, frameMedianMs: gaps[60], frameP95Ms: gaps[Math.floor(gaps.length * 0.95)], line };
}

const frames = (n) => new Promise((resolve) => {
  const step = (left) => (left ? requestAnimationFrame(() => step(left - 1)) : resolve());
  step(n);
});
