// The official SQLite wasm build in a dedicated worker (its sahpool VFS needs one): runs one
// workload per message on a fresh database and answers with its timing. `schema` picks the SQL:
// "store" runs runstore's own schema and statements (official.js), "plain" the SQL a developer
// would write by hand for the same jobs (plain.js).
import { OfficialStore, loadSqlite3, sahPool } from './official.js';
import { PlainStore } from './plain.js';
import { measure } from './workloads.js';

const ready = loadSqlite3();
const STORES = { store: OfficialStore, plain: PlainStore };

self.onmessage = async ({ data: { id, schema, setup, workload, scale, name } }) => {
  try {
    await ready;
    const file = `/${name}.db`;
    const result = await measure(
      workload,
      scale,
      () => STORES[schema].open(setup, file),
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
