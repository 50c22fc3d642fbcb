// runstore/inspector as a strict TypeScript app writes it, checked against the shipped types
// by scripts/build-test-app.sh (tsc, never run).
import { RunStore } from 'runstore';
import { init, RunStoreCore } from 'runstore/core';
import { coreStore, connectCore, syncServerStore, RunStoreInspector } from 'runstore/inspector';
import { WorkflowEngine } from 'runstore/workflow';

export async function mountOnClient(parent: HTMLElement): Promise<RunStoreInspector> {
  const store = await RunStore.open('typed-inspector');
  const engine = await WorkflowEngine.start(store, { workflows: [] });
  const inspector = document.createElement('runstore-inspector');
  inspector.store = store;
  inspector.engine = engine;
  inspector.sync = { url: 'https://sync.example.com', namespace: 'default' };
  inspector.view = 'workflows';
  parent.append(inspector);
  await inspector.ready;
  inspector.select('order-42');
  await store.sync({ url: 'https://sync.example.com', token: 't', onProgress: inspector.syncProgress });
  return inspector;
}

export async function mountOnCore(inspector: RunStoreInspector): Promise<void> {
  await init();
  const core = await RunStoreCore.open('typed-core', { persistence: 'memory' });
  const store = coreStore(core);
  const unsubscribe = store.subscribe({ areas: ['journal'] }, (change) => console.log(change.workflowIds));
  store.changed();
  const count: number = await store.countVisibility({});
  console.log(count);
  unsubscribe();
  inspector.store = core;
}

export async function mountFromWorker(inspector: RunStoreInspector, worker: Worker): Promise<void> {
  const { store, engine } = await connectCore(worker);
  inspector.store = store;
  inspector.engine = engine;
}

export async function mountOnServer(inspector: RunStoreInspector): Promise<() => Promise<void>> {
  const store = await syncServerStore({ url: 'https://sync.example.com', token: 't', namespace: 'team' });
  const unsubscribe = store.subscribeSync((progress) => {
    if (progress.type === 'error') console.log(progress.error.code);
  });
  const namespace: string = store.server.namespace;
  const readOnly: true = store.readOnly;
  const page = await store.listVisibility({}, 50, null);
  console.log(namespace, readOnly, page);
  inspector.store = store;
  return async () => {
    unsubscribe();
    inspector.remove();
    await store.stop();
  };
}
