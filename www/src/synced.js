// Workflows pulled from a sync server were started on another device and run there (the
// engine runs only its own). Here they have a journal but no visibility record, which sync does
// not carry: the leader tab writes one from the journal, so that the inspector lists them too.

import { readAll } from './pages.js';
import { foldRun, runsHere, startedOf } from './history.js';

/** Writes the visibility record of each of `workflowIds` that another device runs. */
export async function showSynced(store, engine, workflowIds) {
  for (const id of workflowIds) {
    const started = await startedOf(store, id);
    if (!started || runsHere(engine, started)) continue;
    const summary = await store.workflowSummary(id);
    const run = foldRun(await readAll((page) => store.readHistory(id, page)));
    const commands = [...run.commands.values()];
    const done = commands.filter((c) => c.kind === 'step' && c.status === 'done');
    const open = commands.find((c) => ['running', 'retrying', 'waiting'].includes(c.status));
    const record = {
      workflowId: id,
      runId: summary.runId,
      workflowType: summary.workflowType,
      status: summary.status,
      startTime: summary.startedAt,
      closeTime: summary.closedAt,
      head: summary.head,
      searchAttributes: {
        engine: 'runstore/workflow',
        origin: started.data.origin,
        steps: done.length,
        step: done.at(-1)?.name ?? null,
        waiting: summary.status === 'running' && open ? `${open.kind} ${open.name}` : null,
      },
    };
    try {
      await store.commit({ operations: [{ op: 'upsertVisibility', record }] });
    } catch (error) {
      // CONFLICT: a record of a later head is there already (a later pull wrote it first).
      if (error.code !== 'CONFLICT') throw error;
    }
  }
}
