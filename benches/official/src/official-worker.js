// The official SQLite wasm build in a dedicated worker (its sahpool VFS needs one): runs one
// workload per message on a fresh database and answers with its timing.
import { OfficialStore, loadSqlite3, sahPool } from './official.js';
import { measure } from './workloads.js';

const ready = loadSqlite3();

self.onmessage = async ({ data: { id, setup, workload, scale, name } }) => {
  try {
    await ready;
    const file = `/${name}.db`;
    const result = await measure(
      workload,
      scale,
      () => OfficialStore.open(setup, file),
      async (store) => {
        store.close();
        if (setup !== 'memory') (await sahPool()).unlink(file);
      },
    );
    self.postMessage({ id, result });
  } catch (error) {
    self.postMessage({ id, error: String(error?.stack ?? error) });
  }
};
