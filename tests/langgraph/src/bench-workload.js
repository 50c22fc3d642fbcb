// The saver benchmark's workload, the same in Node and in a page: the validation suite's
// operations (put, putWrites, getTuple by id and latest, list with a limit) on one thread of
// `n` checkpoints, and a LangGraph.js graph of 50 super-steps. Each result is operations per
// second; `bytes` is measured by the caller (the store's pages or the SQLite file).
import { Annotation, END, START, StateGraph } from '@langchain/langgraph/web';
import { uuid6 } from '@langchain/langgraph-checkpoint';

const NOTE = 'x'.repeat(1000);

function checkpointAt(i, previous) {
  const versions = { counter: i + 1, notes: Math.floor(i / 10) + 1 };
  return {
    checkpoint: { v: 4, id: uuid6(-3), ts: new Date().toISOString(), channel_values: { counter: i, notes: `${NOTE}${Math.floor(i / 10)}` }, channel_versions: versions, versions_seen: {} },
    // A put names the channels that changed: the counter at every step, the 1 KB note every 10th.
    newVersions: previous ? Object.fromEntries(Object.entries(versions).filter(([k, v]) => previous[k] !== v)) : versions,
    versions,
  };
}

async function timed(count, body) {
  const started = performance.now();
  for (let i = 0; i < count; i += 1) await body(i);
  const ms = performance.now() - started;
  return (count * 1000) / ms;
}

/** put + putWrites, getTuple, list on one thread: ops/s of each. */
export async function saverWorkload(saver, n) {
  const thread = `bench-${uuid6(-3)}`;
  let config = { configurable: { thread_id: thread, checkpoint_ns: '' } };
  let previous = null;
  const ids = [];
  const put = await timed(n, async (i) => {
    const { checkpoint, newVersions, versions } = checkpointAt(i, previous);
    config = await saver.put(config, checkpoint, { source: 'loop', step: i, parents: {} }, newVersions);
    await saver.putWrites(config, [['counter', i + 1]], `task-${i}`);
    ids.push(checkpoint.id);
    previous = versions;
  });
  const getTuple = await timed(n, async (i) => {
    const tuple = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: '', checkpoint_id: ids[(i * 7919) % n] } });
    if (!tuple) throw new Error('missing checkpoint');
  });
  const latest = await timed(n, async () => {
    if (!(await saver.getTuple({ configurable: { thread_id: thread } }))) throw new Error('missing latest');
  });
  const listRounds = Math.max(1, Math.floor(n / 10));
  const list = await timed(listRounds, async () => {
    let count = 0;
    for await (const _ of saver.list({ configurable: { thread_id: thread } }, { limit: 10 })) count += 1;
    if (count !== Math.min(10, n)) throw new Error(`list gave ${count}`);
  });
  return { put, getTuple, latest, list, checkpoints: n };
}

/** A graph whose one node loops 50 times: 50 super-steps, a checkpoint each. Runs per second. */
export async function graphWorkload(saver, runs) {
  const State = Annotation.Root({ count: Annotation(), log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }) });
  const graph = new StateGraph(State)
    .addNode('step', (state) => ({ count: state.count + 1, log: [`step ${state.count + 1}`] }))
    .addEdge(START, 'step')
    .addConditionalEdges('step', (state) => (state.count < 50 ? 'step' : END), ['step', END])
    .compile({ checkpointer: saver });
  const perSecond = await timed(runs, async (i) => {
    const result = await graph.invoke({ count: 0 }, { configurable: { thread_id: `graph-${uuid6(-3)}-${i}` }, recursionLimit: 100 });
    if (result.count !== 50) throw new Error(`the graph stopped at ${result.count}`);
  });
  return { graphRuns: perSecond, superSteps: 50 };
}

/** A runstore store's pages in use and their size, to weigh what checkpoints took. */
export const storePages = (store) => () => {
  const stats = store.storageStats();
  return { pages: stats.pageCount - stats.freelistCount, pageSize: stats.pageSize };
};

/** SqliteSaver's database's pages in use and their size. */
export const sqliteSaverPages = (sqlite) => () => ({
  pages: sqlite.db.pragma('page_count', { simple: true }) - sqlite.db.pragma('freelist_count', { simple: true }),
  pageSize: sqlite.db.pragma('page_size', { simple: true }),
});

/** One measured round of `saver`: `n` checkpoints' operations, `runs` graphs, and the bytes a checkpoint took (`pages` before and after). */
export async function measureSaver(saver, pages, n, runs) {
  const before = pages();
  const ops = await saverWorkload(saver, n);
  const after = pages();
  const bytesPerCheckpoint = Math.round(((after.pages - before.pages) * after.pageSize) / n);
  return { ...ops, ...(await graphWorkload(saver, runs)), bytesPerCheckpoint };
}
