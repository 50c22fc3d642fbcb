// The same calls through the main-thread client and through runstore/core (in an app's own
// worker in a page, parity-worker.js; in the process in Node, node.js): each write method with valid arguments, with each argument in
// turn made NaN, with its last argument missing, and payloads nested near the store's limit.
// One set of checks, the store's, must decide for both: same answers, same codes, same fields.
const NOW = 1_700_000_000_000;
const HASH = 'cd'.repeat(16);
const EVENT = { type: 'custom', name: 'tick', recordedAt: NOW };
const row = (key) => ({ dispatchKey: key, workflowId: 'wf', ordinal: 1, activityType: 'a', input: new Uint8Array([1]), visibleAfter: 0 });

/** Valid arguments of every write method (and a step), each call on its own records. */
function writes() {
  return {
    append: ['p-append', [EVENT], 0],
    appendWithOutbox: ['p-awo', [EVENT], 0, [row('p-awo')]],
    insertOutbox: [[row('p-insert')]],
    claimOutbox: [NOW, 1, { excludeWorkflows: ['none'] }],
    completeOutbox: ['none', 1],
    completeOutboxBatch: [[{ dispatchKey: 'none', claimToken: 1 }]],
    retryOutbox: ['none', 1, 2, NOW],
    failOutbox: ['none', 1, 'gave up'],
    cancelWorkflowOutbox: ['none'],
    rearmStaleClaims: [0, NOW, 5],
    scheduleTimer: ['wf', 't', NOW],
    cancelTimer: ['wf', 'none'],
    compareAndSwapCheckpoint: [{ checkpointId: 'p-cp', revision: 0, state: { n: 1 }, updatedAt: NOW }, null],
    compareAndSwapEffect: [{ effectId: 'p-ef', capabilityId: 'mail', revision: 0, request: {}, status: { type: 'prepared' }, updatedAt: NOW }, null],
    upsertVisibility: [{ workflowId: 'wf', runId: 'r', workflowType: 't', status: 'running', startTime: NOW }],
    recordRunEvent: [{ eventId: 'p-e', runId: 'r', sequence: 1, recordedAt: NOW, data: {} }],
    saveConversation: [{ conversationId: 'p-c', revision: 0, formatVersion: 1, state: new Uint8Array(2), updatedAt: NOW }, null],
    putArtifact: [{ scope: 's', mediaType: 'text/plain', bytes: new Uint8Array(3), idempotencyKey: 'p-ik' }, NOW],
    deleteArtifact: ['s', 'none'],
    purgeExpiredArtifacts: [0],
    purgeWorkflows: [0, 10],
    registerNamespace: ['p-ns', 'explicit', NOW],
    putNamespace: [{ name: 'p-ns2', origin: 'worker', state: 'active', createdAt: NOW, lastSeen: NOW }],
    setNamespacePlacement: ['p-ns', { region: 'eu' }],
    deprecateNamespace: ['none'],
    putPackage: [{ workflowType: 'p-t', contentHash: HASH, archive: new Uint8Array(2), deployedAt: NOW }],
    putPackageForTypes: [{ workflowType: 'p-t2', contentHash: HASH, archive: new Uint8Array(2), deployedAt: NOW }, ['p-t2']],
    deletePackage: ['none', HASH],
    setPackageRoute: ['p-t', HASH],
    commit: [{ operations: [{ op: 'scheduleTimer', workflowId: 'wf', timerId: 'p-step', fireAt: NOW }] }],
  };
}

/** An array nested `depth` levels deep. */
function nested(depth) {
  let value = [];
  for (let i = 1; i < depth; i++) value = [value];
  return value;
}

/** The cases, as [label, method, args]: built afresh for each side. */
export function parityCases() {
  const cases = [];
  for (const [method, args] of Object.entries(writes())) {
    cases.push([`${method} with valid arguments`, method, args]);
    args.forEach((_, i) => {
      const bad = [...args];
      bad[i] = NaN;
      cases.push([`${method} with argument ${i} NaN`, method, bad]);
    });
    cases.push([`${method} without its last argument`, method, args.slice(0, -1)]);
    cases.push([`${method} with a Uint8Array for its first argument`, method, [new Uint8Array([119, 102]), ...args.slice(1)]]);
  }
  cases.push(['claimOutbox with an absent argument between others', 'claimOutbox', [NOW, undefined, {}]]);
  // events[0].data sits 2 levels into the argument: the data's own nesting decides.
  for (let depth = 58; depth <= 66; depth++) {
    cases.push([`append with data nested ${depth} deep`, 'append', [`p-deep-${depth}`, [{ ...EVENT, data: nested(depth) }], 0]]);
  }
  return cases;
}

/** Runs the cases through `call(method, args)`; each outcome as `resolved` or `CODE field`. */
export async function runCases(call) {
  const outcomes = [];
  for (const [label, method, args] of parityCases()) {
    let outcome;
    try {
      await call(method, args);
      outcome = 'resolved';
    } catch (error) {
      outcome = `${error?.name === 'RunStoreError' ? error.code : `plain ${error?.name}`} ${error?.field ?? ''}`.trim();
    }
    outcomes.push([label, outcome]);
  }
  return outcomes;
}

/** The cases on a fresh memory store of `core` (runstore/core's exports); resolves to their outcomes. */
export async function runOnCore({ init, RunStoreCore }, name) {
  await init();
  const store = await RunStoreCore.open(name, { persistence: 'memory' });
  const outcomes = await runCases(async (method, args) => store[method](...args));
  await store.close();
  return outcomes;
}

/** The cases through `RunStore` (the main-thread client) on the store `name` opened with `options`. */
export async function runOnClient(RunStore, name, options) {
  const store = await RunStore.open(name, options);
  const outcomes = await runCases((method, args) => store[method](...args));
  await store.close();
  return outcomes;
}
