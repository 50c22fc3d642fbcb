// What the inspector can do, each through the public API and each after a dialog that says what
// it will do: signal, cancel and run again a workflow (through the engine given,
// `engine.signal`, `engine.cancel` and `engine.retry`, which every tab may call), requeue a
// dead letter, purge closed workflows, export the store as a SQLite file and a workflow as JSON.
import { field } from './inspector-dialog.js';
import { bytes, clock, html, plural } from './inspector-html.js';

/** Offers `data` as a file to save: a link in the page's own document (not a request). */
export function download(doc, name, data, type) {
  const url = URL.createObjectURL(new Blob([data], { type }));
  const link = Object.assign(doc.createElement('a'), { href: url, download: name });
  link.hidden = true;
  doc.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

const stamp = () => new Date().toISOString().replaceAll(':', '-').slice(0, 19);

/** A datetime-local input's value for `ms`, in the page's time zone, to the second (the input's step). */
function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 19);
}

export function signal(ctx, confirm, workflowId) {
  return confirm.ask({
    title: 'Send a signal',
    ok: 'Send signal',
    focus: 'name',
    body: html`<p>Sends a signal to workflow <code>${workflowId}</code> through <code>engine.signal</code>: its next
      <code>ctx.waitForSignal(name)</code> gets the payload (a signal that comes before the wait is kept for it).
      A signal id sent before is kept once: sending it again changes nothing.</p>
      ${field('Signal name', html`<input name="name" required spellcheck="false" autocomplete="off" />`)}
      ${field('Payload (JSON, may be empty)', html`<textarea name="payload" spellcheck="false"></textarea>`)}
      ${field('Signal id (empty: a new one)', html`<input name="signalId" spellcheck="false" autocomplete="off" />`)}`,
    run: async (form) => {
      const data = new FormData(form);
      const name = String(data.get('name')).trim();
      if (!name) throw new Error('the signal needs a name');
      const text = String(data.get('payload')).trim();
      let payload;
      try {
        payload = text === '' ? undefined : JSON.parse(text);
      } catch (error) {
        throw new Error(`the payload is not JSON: ${error.message}`);
      }
      const signalId = String(data.get('signalId')).trim();
      const outcome = await ctx.engine.signal(workflowId, name, payload, signalId ? { signalId } : undefined);
      return outcome.duplicate
        ? `Signal id ${outcome.signalId} was sent before: nothing changed.`
        : `Signal ${name} sent to ${workflowId} (id ${outcome.signalId}).`;
    },
  });
}

export function cancel(ctx, confirm, workflowId) {
  return confirm.ask({
    title: 'Cancel the workflow',
    ok: 'Cancel workflow',
    focus: 'cancel',
    body: html`<p>Asks workflow <code>${workflowId}</code> to cancel through <code>engine.cancel</code>: <code>CANCELLED</code> is raised
      at the await it is at, and the run ends cancelled once its code returns (its cleanup code may still run steps). It cannot be resumed.</p>
      ${field('Reason (kept in its journal)', html`<input name="reason" autocomplete="off" value="cancelled in the inspector" />`)}`,
    run: async (form) => {
      const reason = String(new FormData(form).get('reason')).trim();
      await ctx.engine.cancel(workflowId, { reason: reason || undefined });
      return `Cancellation of ${workflowId} requested.`;
    },
  });
}

export function retry(ctx, confirm, workflowId) {
  return confirm.ask({
    title: 'Run the workflow again',
    ok: 'Run again',
    focus: 'cancel',
    body: html`<p>Starts workflow <code>${workflowId}</code> again through <code>engine.retry</code>: a new run under the same id,
      from the top, with the input of the run that failed or was cancelled. That run stays in its journal; steps it completed
      run again in the new run (under new idempotency keys).</p>`,
    run: async () => {
      await ctx.engine.retry(workflowId);
      return `Workflow ${workflowId} runs again.`;
    },
  });
}

/**
 * A dead letter stays a dead letter: no store operation moves a row back to pending. A requeue
 * inserts a copy, a new pending row with its workflow, activity, input and route, under a new
 * dispatch key (a dispatcher that deduplicates by key sees a new row).
 */
export function requeue(ctx, confirm, row) {
  const key = `${row.dispatchKey}#requeued-${Date.now()}`;
  return confirm.ask({
    title: 'Requeue a dead letter',
    ok: 'Insert the copy',
    focus: 'cancel',
    body: html`<p>Dead letter <code>${row.dispatchKey}</code> (${row.deadReason ?? 'no reason recorded'}).</p>
      <p>The store has no operation that moves a dead letter back to pending, so this inserts a copy (<code>insertOutbox</code>):
      a new pending row <code>${key}</code> with the same workflow, activity <code>${row.activityType}</code>, input and route,
      attempt 0, visible now, at most ${row.maxAttempts} attempts. The dead letter stays as it is. A dispatcher that
      deduplicates by dispatch key will run it again.</p>`,
    run: async () => {
      const copy = {
        dispatchKey: key,
        workflowId: row.workflowId,
        ordinal: row.ordinal,
        activityType: row.activityType,
        input: row.input,
        visibleAfter: Date.now(),
        attempt: 0,
        runId: row.runId,
        namespace: row.namespace,
        taskQueue: row.taskQueue,
        node: row.node,
        maxAttempts: row.maxAttempts,
      };
      // One request id: sent again after a tab hand-off, it is applied once.
      await ctx.store.commit({ requestId: `runstore.inspector/requeue/${key}`, operations: [{ op: 'insertOutbox', rows: [copy] }] });
      return `Inserted ${key}, pending.`;
    },
  });
}

export function purge(ctx, confirm) {
  const describe = async (form) => {
    const before = new Date(String(new FormData(form).get('before'))).getTime();
    const out = form.querySelector('[data-purge-count]');
    if (!Number.isFinite(before)) {
      out.textContent = 'Choose a time.';
      return;
    }
    const n = await ctx.store.countVisibility({ closeTime: { before } });
    out.textContent = `The visibility index has ${plural(n, 'workflow')} closed before ${clock(before)}.`;
  };
  return confirm.ask({
    title: 'Purge closed workflows',
    ok: 'Purge',
    focus: 'cancel',
    body: html`<p>Deletes every workflow that closed (completed, failed or cancelled) before the time below, through
      <code>purgeWorkflows</code>, 1,000 at a time: its journal, outbox rows, timers and visibility record. Effect records,
      checkpoints and artifacts stay. <b>This cannot be undone</b> (export the store first to keep a copy).</p>
      ${field('Closed before', html`<input type="datetime-local" name="before" step="1" required value="${localInput(Math.ceil(Date.now() / 1000) * 1000)}" />`)}
      <p data-purge-count aria-live="polite"></p>`,
    onInput: (form) => describe(form).catch(() => {}),
    run: async (form) => {
      const before = new Date(String(new FormData(form).get('before'))).getTime();
      if (!Number.isFinite(before)) throw new Error('choose a time');
      const total = { workflows: 0, events: 0 };
      for (;;) {
        const counts = await ctx.store.purgeWorkflows(before, 1000);
        total.workflows += counts.workflows;
        total.events += counts.events;
        if (!counts.more) break;
      }
      return `Purged ${plural(total.workflows, 'workflow')} (${plural(total.events, 'event')}).`;
    },
  });
}

export async function exportStore(ctx, confirm) {
  const stats = await ctx.store.storageStats().catch(() => null);
  const size = stats ? ` (about ${bytes(stats.pageSize * (stats.pageCount - stats.freelistCount))})` : '';
  return confirm.ask({
    title: 'Export the store',
    ok: 'Download',
    body: html`<p>Downloads the whole store as one SQLite file${size} through <code>exportDatabase</code>: every workflow,
      journal, ledger, outbox, checkpoint and artifact. <code>importDatabase</code> (here, in another browser, or in a native
      store) loads it back. The file is made in this page; nothing is sent anywhere.</p>`,
    run: async () => {
      const data = await ctx.store.exportDatabase();
      download(ctx.document, `runstore-${stamp()}.sqlite`, data, 'application/vnd.sqlite3');
      return `Exported ${bytes(data.length)}.`;
    },
  });
}

export function exportRun(ctx, confirm, workflowId, state) {
  const events = state?.events.length ?? 0;
  return confirm.ask({
    title: 'Export the workflow as JSON',
    ok: 'Download',
    body: html`<p>Downloads workflow <code>${workflowId}</code> as one JSON file: its visibility record, its ${plural(events, 'journal event')},
      the effect records of its steps, its artifacts' metadata (their bytes are left out; download them one by one) and its run's checkpoints.</p>`,
    run: async () => {
      const s = state;
      const file = {
        exportedAt: new Date().toISOString(),
        workflowId,
        visibility: s.record,
        head: s.head,
        events: s.events,
        effects: [...s.effects.values()].filter(Boolean),
        artifacts: s.artifacts,
        checkpoints: s.checkpoints,
      };
      download(ctx.document, `${workflowId.replace(/[^\w.-]+/g, '_')}.json`, JSON.stringify(file, null, 2), 'application/json');
      return `Exported ${workflowId} (${plural(events, 'event')}).`;
    },
  });
}
