// The store's methods, as RunStoreCore (src/wasm/facade_*.rs) exposes them, with their
// parameter names in order: errors name the argument they are about. The main-thread client
// forwards each to the worker; a test checks this table against the wasm class.
export const PARAMETERS = Object.freeze({
  append: ['workflowId', 'events', 'expectedSeq'],
  appendWithOutbox: ['workflowId', 'events', 'expectedSeq', 'outbox'],
  readHistory: ['workflowId', 'page'],
  readHistoryFrom: ['workflowId', 'fromSeq', 'page'],
  head: ['workflowId'],
  listWorkflowIds: ['page'],
  listActive: ['page'],
  listPaused: ['page'],
  workflowSummary: ['workflowId'],
  queryWorkflows: ['query', 'page'],
  readRunChain: ['workflowId'],
  findUndecodableEvent: [],
  scheduleTimer: ['workflowId', 'timerId', 'fireAt'],
  dueTimers: ['asOf', 'page'],
  cancelTimer: ['workflowId', 'timerId'],
  listTimers: ['page'],
  insertOutbox: ['rows'],
  claimOutbox: ['now', 'limit', 'filter'],
  completeOutbox: ['dispatchKey', 'claimToken'],
  completeOutboxBatch: ['claims'],
  retryOutbox: ['dispatchKey', 'claimToken', 'nextAttempt', 'visibleAfter'],
  failOutbox: ['dispatchKey', 'claimToken', 'reason'],
  cancelWorkflowOutbox: ['workflowId'],
  rearmStaleClaims: ['olderThan', 'visibleAfter', 'limit'],
  listStaleClaims: ['olderThan', 'page'],
  listUnsettledWorkflows: ['page'],
  namespaceLoads: ['namespaces'],
  claimableRoutes: ['now'],
  outboxRowState: ['dispatchKey'],
  listOutbox: ['status', 'page'],
  upsertVisibility: ['record'],
  getVisibility: ['workflowId'],
  listVisibility: ['filter', 'pageSize', 'cursor'],
  countVisibility: ['filter'],
  registerNamespace: ['name', 'origin', 'now'],
  putNamespace: ['record'],
  getNamespace: ['name'],
  listNamespaces: ['page'],
  setNamespacePlacement: ['name', 'placement'],
  deprecateNamespace: ['name'],
  putPackage: ['record'],
  putPackageForTypes: ['record', 'memberTypes'],
  getPackage: ['workflowType', 'contentHash'],
  listPackages: ['page'],
  deletePackage: ['workflowType', 'contentHash'],
  setPackageRoute: ['workflowType', 'contentHash'],
  listPackageRoutes: ['page'],
  getPackageRoute: ['workflowType'],
  loadCheckpoint: ['checkpointId'],
  compareAndSwapCheckpoint: ['checkpoint', 'expectedRevision'],
  listRunCheckpoints: ['runId', 'page'],
  loadEffect: ['effectId'],
  findEffect: ['capabilityId', 'idempotencyKey'],
  compareAndSwapEffect: ['record', 'expectedRevision'],
  listUnresolvedEffects: ['page'],
  listEffects: ['status', 'page'],
  recordRunEvent: ['event'],
  readRunEvents: ['runId', 'page'],
  listRunIds: ['page'],
  putArtifact: ['artifact', 'now'],
  getArtifact: ['scope', 'artifactId'],
  listArtifacts: ['scope', 'page'],
  deleteArtifact: ['scope', 'artifactId'],
  purgeExpiredArtifacts: ['now'],
  loadConversation: ['conversationId'],
  saveConversation: ['state', 'expectedRevision'],
  commit: ['step'],
  requestOutcome: ['requestId'],
  syncTarget: ['target'],
  syncWorkflows: ['target', 'selection', 'page'],
  syncHeads: ['target', 'workflowIds'],
  purgeWorkflows: ['closedBefore', 'limit'],
  storageStats: [],
  vacuum: [],
  exportDatabase: [],
  importDatabase: ['bytes', 'requestId'],
});

export const METHODS = Object.freeze(Object.keys(PARAMETERS));

// Every write, as the operation it travels as (src/model/steps.rs): the client sends each as a
// one-operation step under a request id it generates, so that a re-send after a tab hand-off
// is applied at most once. `operation` maps the method's positional arguments to the
// operation; `result` maps the operation's outcome back to what the method returns.
const none = () => undefined;
export const WRITE_OPERATIONS = Object.freeze({
  append: {
    // (no `outbox` key: an absent optional field, not an undefined one)
    operation: (workflowId, events, expectedSeq) => ({ op: 'append', workflowId, events, expectedSeq }),
    result: (o) => o.head,
  },
  appendWithOutbox: {
    operation: (workflowId, events, expectedSeq, outbox) => ({ op: 'append', workflowId, events, expectedSeq, outbox }),
    result: (o) => o.head,
  },
  insertOutbox: { operation: (rows) => ({ op: 'insertOutbox', rows }), result: (o) => o.inserted },
  claimOutbox: {
    // A null filter means none, as the method takes it; the step's operation has no null form.
    operation: (now, limit, filter) => ({ op: 'claimOutbox', now, limit, filter: filter ?? undefined }),
    result: (o) => o.rows,
  },
  completeOutbox: {
    operation: (dispatchKey, claimToken) => ({ op: 'completeOutbox', dispatchKey, claimToken }),
    result: none,
  },
  completeOutboxBatch: { operation: (claims) => ({ op: 'completeOutboxBatch', claims }), result: none },
  retryOutbox: {
    operation: (dispatchKey, claimToken, nextAttempt, visibleAfter) => ({ op: 'retryOutbox', dispatchKey, claimToken, nextAttempt, visibleAfter }),
    result: (o) => o.status,
  },
  failOutbox: {
    operation: (dispatchKey, claimToken, reason) => ({ op: 'failOutbox', dispatchKey, claimToken, reason }),
    result: none,
  },
  cancelWorkflowOutbox: {
    operation: (workflowId) => ({ op: 'cancelWorkflowOutbox', workflowId }),
    result: (o) => o.cancelled,
  },
  rearmStaleClaims: {
    operation: (olderThan, visibleAfter, limit) => ({ op: 'rearmStaleClaims', olderThan, visibleAfter, limit }),
    result: (o) => o.rows,
  },
  scheduleTimer: {
    operation: (workflowId, timerId, fireAt) => ({ op: 'scheduleTimer', workflowId, timerId, fireAt }),
    result: none,
  },
  cancelTimer: { operation: (workflowId, timerId) => ({ op: 'cancelTimer', workflowId, timerId }), result: (o) => o.removed },
  compareAndSwapCheckpoint: {
    operation: (checkpoint, expectedRevision) => ({ op: 'compareAndSwapCheckpoint', checkpoint, expectedRevision }),
    result: none,
  },
  compareAndSwapEffect: {
    operation: (record, expectedRevision) => ({ op: 'compareAndSwapEffect', record, expectedRevision }),
    result: none,
  },
  upsertVisibility: { operation: (record) => ({ op: 'upsertVisibility', record }), result: none },
  recordRunEvent: { operation: (event) => ({ op: 'recordRunEvent', event }), result: none },
  saveConversation: {
    operation: (state, expectedRevision) => ({ op: 'saveConversation', state, expectedRevision }),
    result: none,
  },
  putArtifact: { operation: (artifact, now) => ({ op: 'putArtifact', artifact, now }), result: (o) => o.artifact },
  deleteArtifact: { operation: (scope, artifactId) => ({ op: 'deleteArtifact', scope, artifactId }), result: (o) => o.deleted },
  purgeExpiredArtifacts: { operation: (now) => ({ op: 'purgeExpiredArtifacts', now }), result: (o) => o.purged },
  purgeWorkflows: {
    operation: (closedBefore, limit) => ({ op: 'purgeWorkflows', closedBefore, limit }),
    result: (o) => o.counts,
  },
  registerNamespace: {
    operation: (name, origin, now) => ({ op: 'registerNamespace', name, origin, now }),
    result: (o) => o.outcome,
  },
  putNamespace: { operation: (record) => ({ op: 'putNamespace', record }), result: (o) => o.outcome },
  setNamespacePlacement: {
    operation: (name, placement) => ({ op: 'setNamespacePlacement', name, placement }),
    result: none,
  },
  deprecateNamespace: { operation: (name) => ({ op: 'deprecateNamespace', name }), result: (o) => o.deprecated },
  putPackage: { operation: (record) => ({ op: 'putPackage', record }), result: none },
  putPackageForTypes: {
    operation: (record, memberTypes) => ({ op: 'putPackage', record, memberTypes }),
    result: none,
  },
  deletePackage: {
    operation: (workflowType, contentHash) => ({ op: 'deletePackage', workflowType, contentHash }),
    result: (o) => o.droppedRoutes,
  },
  setPackageRoute: {
    operation: (workflowType, contentHash) => ({ op: 'setPackageRoute', workflowType, contentHash }),
    result: none,
  },
});

// Deletes and purges travel as plain calls, without a request id: they must work on a full
// disk, where the request log cannot grow (the store frees room and runs them again), and
// applying one twice changes nothing more (a repeat answers `false` or 0, or NOT_FOUND for a
// package).
export const PLAIN_WRITES = new Set(['deleteArtifact', 'purgeExpiredArtifacts', 'purgeWorkflows', 'deletePackage']);

/** Every area a change notice can name. */
export const AREAS = Object.freeze([
  'journal',
  'timers',
  'outbox',
  'visibility',
  'namespaces',
  'packages',
  'checkpoints',
  'effects',
  'runJournal',
  'artifacts',
  'conversations',
]);

// What each operation changes: its areas, and the workflow, head or revision it names.
const OPERATION_CHANGES = {
  append: (op, o, c) => {
    c.area('journal').workflow(op.workflowId).head(op.workflowId, o.head);
    // An array, or its length alone in an operation sent as text (wire.js).
    if (op.outbox?.length > 0) c.area('outbox');
  },
  insertOutbox: (op, o, c) => {
    c.area('outbox');
    for (const row of op.rows) c.workflow(row.workflowId);
  },
  claimOutbox: (op, o, c) => outboxRows(o.rows, c),
  completeOutbox: (op, o, c) => c.area('outbox'),
  completeOutboxBatch: (op, o, c) => c.area('outbox'),
  retryOutbox: (op, o, c) => c.area('outbox'),
  failOutbox: (op, o, c) => c.area('outbox'),
  rearmStaleClaims: (op, o, c) => outboxRows(o.rows, c),
  cancelWorkflowOutbox: (op, o, c) => c.area('outbox').workflow(op.workflowId),
  scheduleTimer: (op, o, c) => c.area('timers').workflow(op.workflowId),
  cancelTimer: (op, o, c) => c.area('timers').workflow(op.workflowId),
  compareAndSwapCheckpoint: (op, o, c) => c.area('checkpoints').revision('checkpoint', op.checkpoint.checkpointId, o.revision),
  compareAndSwapEffect: (op, o, c) => c.area('effects').revision('effect', op.record.effectId, o.revision),
  upsertVisibility: (op, o, c) => c.area('visibility').workflow(op.record.workflowId),
  recordRunEvent: (op, o, c) => c.area('runJournal'),
  saveConversation: (op, o, c) => c.area('conversations').revision('conversation', op.state.conversationId, o.revision),
  putArtifact: (op, o, c) => c.area('artifacts'),
  deleteArtifact: (op, o, c) => c.area('artifacts'),
  purgeExpiredArtifacts: (op, o, c) => c.area('artifacts'),
  purgeWorkflows: (op, o, c) => ['journal', 'outbox', 'timers', 'visibility'].forEach((a) => c.area(a)),
  registerNamespace: (op, o, c) => c.area('namespaces'),
  putNamespace: (op, o, c) => c.area('namespaces'),
  setNamespacePlacement: (op, o, c) => c.area('namespaces'),
  deprecateNamespace: (op, o, c) => c.area('namespaces'),
  putPackage: (op, o, c) => c.area('packages'),
  deletePackage: (op, o, c) => c.area('packages'),
  setPackageRoute: (op, o, c) => c.area('packages'),
  // The sync state is the sync's own bookkeeping, no area an app reads.
  saveSync: () => {},
};

function outboxRows(rows, c) {
  c.area('outbox');
  for (const row of rows) c.workflow(row.workflowId);
}

/** Collects one commit's change notice (see `Change` in index.d.ts). */
class ChangeBuilder {
  #areas = new Set();
  #workflows = new Set();
  heads = {};
  revisions = [];
  area(name) {
    this.#areas.add(name);
    return this;
  }
  workflow(id) {
    this.#workflows.add(id);
    return this;
  }
  head(id, head) {
    this.heads[id] = head;
    return this;
  }
  revision(kind, id, revision) {
    this.revisions.push({ kind, id, revision });
    return this;
  }
  build(requestId) {
    return {
      requestId: requestId ?? null,
      areas: [...this.#areas],
      workflowIds: [...this.#workflows],
      heads: this.heads,
      revisions: this.revisions,
    };
  }
}

/** The change notice of an import that replaced the store's content (null for a replay). */
export function importChange(requestId, outcome) {
  if (outcome.replayed) return null;
  return { requestId: requestId ?? null, areas: [...AREAS], workflowIds: [], heads: {}, revisions: [] };
}

/** The change notice of a plain write (see PLAIN_WRITES) that returned. */
export function plainChange(method, args) {
  return stepChange({ requestId: null, operations: [WRITE_OPERATIONS[method].operation(...args)] }, { replayed: false, outcomes: [{}] });
}

/** The change notice of a step that committed with `outcome` (null for a replay: nothing changed). */
export function stepChange(step, outcome) {
  if (outcome.replayed) return null;
  const change = new ChangeBuilder();
  step.operations.forEach((op, index) => OPERATION_CHANGES[op.op](op, outcome.outcomes[index], change));
  return change.build(step.requestId);
}
