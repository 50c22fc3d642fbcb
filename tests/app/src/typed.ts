// Type-checked (tsc --noEmit) against the .d.ts files the package ships: a typed use of the
// client as an application would write it. Never run; a wrong type here fails the build.
import {
  RunStore,
  RunStoreError,
  type Event,
  type OutboxClaim,
  type OutboxRow,
  type OutboxRowState,
  type StoredEvent,
  type WorkflowSummary,
  type ArtifactMeta,
  type EffectRecord,
  type StepOutcome,
  type RequestRecord,
  type RequestOutcome,
  type Page,
  type PackageMeta,
  type PurgeCounts,
  type StorageEstimate,
  type ImportOutcome,
  type Operation,
  type OperationOutcome,
  type Step,
  storageEstimate,
  requestPersistence,
} from 'runstore';
import type { RunStoreCore } from 'runstore/core';

export async function typedUsage(): Promise<number> {
  const store: RunStore = await RunStore.open('typed', { persistence: 'opfs', durability: 'relaxed' });
  const started: Event = {
    type: 'started',
    workflowType: 'order',
    runId: 'r1',
    recordedAt: Date.now(),
    data: { order: 42, lines: [1, 2] },
  };
  const head: number = await store.append('order-42', [started], 0);
  const page: Page<StoredEvent> = await store.readHistory('order-42', { limit: 100 });
  const next: Page<StoredEvent> = await store.readHistory('order-42', { cursor: page.nextCursor });
  const history: StoredEvent[] = [...page.items, ...next.items];
  const first = history[0];
  if (first.type === 'started') {
    const type: string = first.workflowType;
    void type;
  }
  const summary: WorkflowSummary = await store.workflowSummary('order-42');
  const rows: OutboxRow[] = await store.claimOutbox(Date.now(), 10);
  const input: Uint8Array | undefined = rows[0]?.input;
  void input;
  const claims: OutboxClaim[] = rows.map((r) => ({ dispatchKey: r.dispatchKey, claimToken: r.claimToken }));
  await store.completeOutboxBatch(claims);
  const retried: 'pending' | 'failed' = await store.retryOutbox('k', rows[0].claimToken, 1, Date.now());
  void retried;
  await store.failOutbox('k', rows[0].claimToken, 'gave up');
  const state: OutboxRowState | null = await store.outboxRowState('k');
  const reason: string | null | undefined = state?.deadReason;
  void reason;
  const effect: EffectRecord = {
    effectId: 'e1',
    capabilityId: 'email',
    idempotencyKey: 'welcome:42',
    revision: 0,
    request: { to: 'a@example.com' },
    status: { type: 'prepared' },
    updatedAt: Date.now(),
  };
  await store.compareAndSwapEffect(effect, null);
  const meta: ArtifactMeta = await store.putArtifact(
    { scope: 'run-1', mediaType: 'text/plain', bytes: new TextEncoder().encode('hi') },
    Date.now(),
  );
  const sha: string = meta.sha256;
  void sha;
  try {
    await store.append('order-42', [started], 0);
  } catch (error) {
    if (error instanceof RunStoreError && error.code === 'SEQUENCE_CONFLICT') {
      const actual: number | null | undefined = error.actual;
      void actual;
    }
  }
  const step: StepOutcome = await store.commit({
    requestId: 'order-42/step-2',
    operations: [
      { op: 'append', workflowId: 'order-42', events: [started], expectedSeq: head },
      { op: 'scheduleTimer', workflowId: 'order-42', timerId: 'reminder', fireAt: Date.now() },
    ],
  });
  const outcome = step.outcomes[0];
  if (outcome.op === 'append') {
    const newHead: number = outcome.head;
    void newHead;
  }
  const recorded: RequestOutcome = await store.requestOutcome('order-42/step-2');
  const outcomes: RequestRecord['outcomes'] | null = recorded.status === 'committed' ? recorded.outcomes : null;
  const forgotten: number | null = recorded.status === 'unknown' ? recorded.forgottenThrough : null;
  void outcomes;
  void forgotten;
  const packages: PackageMeta[] = (await store.listPackages()).items;
  const size: number | undefined = packages[0]?.sizeBytes;
  void size;
  const purged: PurgeCounts = await store.purgeWorkflows(Date.now() - 86_400_000, 100);
  const more: boolean = purged.more;
  void more;
  const estimate: StorageEstimate = await storageEstimate();
  const persisted: boolean = await requestPersistence();
  void persisted;
  await store.close();
  const file: Uint8Array = await store.exportDatabase();
  const imported: ImportOutcome = await store.importDatabase(file, 'import-1');
  const replayed: boolean = (await store.importDatabase(file)).replayed;
  void replayed;
  return head + summary.head + estimate.usage + imported.schemaVersion;
}

/** An encrypted store: a key of bytes or a passphrase, rekey, a plain export, WRONG_KEY. */
export async function typedEncryption(key: Uint8Array): Promise<Uint8Array | null> {
  try {
    const store = await RunStore.open('vault', { key, durability: 'full' });
    await store.rekey('a passphrase');
    await store.rekey(new Uint8Array(32));
    const plain = await RunStore.open('notes');
    let share = 0;
    await plain.rekey(key, { onProgress: ({ done, total }) => (share = done / total) });
    void share;
    const sealed: Uint8Array = await store.exportDatabase();
    void sealed;
    return await store.exportDatabase({ plain: true });
  } catch (error) {
    if (error instanceof RunStoreError && error.code === 'WRONG_KEY') return null;
    throw error;
  }
}

/** Answers typed as precisely as the call allows: no casts, no checks the store already made. */
export async function preciseAnswers(store: RunStore, core: RunStoreCore): Promise<number> {
  const operations = [
    { op: 'append', workflowId: 'w', expectedSeq: 0, events: [{ type: 'completed', recordedAt: 1 }] },
    { op: 'scheduleTimer', workflowId: 'w', timerId: 't', fireAt: 1 },
  ] as const satisfies readonly Operation[];
  // A step written in the call: each outcome has its operation's type, on both hosts.
  const { outcomes } = await store.commit({ operations: [operations[0], operations[1]] });
  const head: number = outcomes[0].head;
  // @ts-expect-error: a scheduleTimer outcome has no head.
  void outcomes[1].head;
  const coreHead: number = core.commit({ operations: [operations[0]] }).outcomes[0].head;
  // A step typed as Step: outcomes of any operation, narrowed by `op`.
  const step: Step = { operations: [] };
  const any: OperationOutcome[] = (await store.commit(step)).outcomes;
  // Any event's fields read (undefined where its kind has none); `type` narrows.
  const event: StoredEvent = (await store.readHistory('w')).items[0];
  const name: string | undefined = event.name;
  if (event.type === 'custom') void (event.name satisfies string);
  // Bytes the store answers go into a Blob as they are.
  const blob = new Blob([await store.exportDatabase(), (await store.claimOutbox(1, 1))[0].input]);
  return head + coreHead + any.length + (name?.length ?? 0) + blob.size;
}

// @ts-expect-error: a settlement names the claim's token.
export const untokened = (store: RunStore) => store.completeOutbox('k');

// @ts-expect-error: events must be an array of Event objects.
export const wrong = (store: RunStore) => store.append('x', { type: 'completed' }, 0);

// @ts-expect-error: an operation needs a known `op` tag.
export const unknownOp = (store: RunStore) => store.commit({ operations: [{ op: 'dropTable' }] });

/** A sync with a server, typed as an app would write it. */
export async function typedSync(store: RunStore, signal: AbortSignal): Promise<number> {
  const summary = await store.sync({
    url: 'https://sync.example.com',
    token: 'secret',
    namespace: 'team',
    signal,
    onProgress: (progress) => {
      if (progress.type === 'pushed' || progress.type === 'pulled') void progress.head;
      if (progress.type === 'error') void progress.error.code;
    },
  });
  for (const conflict of summary.conflicts) {
    const heads: [number | undefined, number | undefined] = [conflict.localHead, conflict.serverHead];
    const events: StoredEvent[] | undefined = conflict.serverEvents;
    void heads;
    void events;
  }
  return summary.pushed.events + summary.pulled.events + summary.cursor;
}

// @ts-expect-error: a sync needs the server's URL and a token.
export const tokenless = (store: RunStore) => store.sync({ url: 'https://sync.example.com' });
