// Hostile input, run the same way through the main-thread client (RunStore, over postMessage)
// and through runstore/core in an app's own worker: a table of cases, each with the code and
// field it must get and a check that nothing changed, then a property test that calls every
// method with random arguments. `call(method, args)` returns a promise either way; the
// method table (js/methods.js, which the package does not export) comes from the test driver.
const NOW = 1_700_000_000_000;
const HASH = 'ab'.repeat(16);
const EVENT = { type: 'custom', name: 'tick', recordedAt: NOW };
const ROW = {
  dispatchKey: 'k-wf', workflowId: 'wf', ordinal: 1, activityType: 'send',
  input: new Uint8Array([1, 2]), visibleAfter: 0,
};

/** What the store holds, read by every method family: compared before and after a refused call. */
export async function snapshot(call) {
  const all = { limit: 10_000 };
  const items = async (method, args) => (await call(method, [...args, all])).items;
  return JSON.stringify({
    ids: await items('listWorkflowIds', []),
    history: (await items('readHistory', ['wf'])).length,
    outbox: (await items('listOutbox', [null])).map((r) => [r.dispatchKey, r.status, r.attempt]),
    namespaces: await items('listNamespaces', []),
    packages: (await items('listPackages', [])).map((p) => [p.workflowType, p.contentHash]),
    routes: await items('listPackageRoutes', []),
    timers: await items('listTimers', []),
    visibility: await call('countVisibility', [{}]),
    checkpoints: (await items('listRunCheckpoints', ['run'])).map((c) => [c.checkpointId, c.revision]),
    effects: (await items('listEffects', [null])).map((e) => [e.effectId, e.revision]),
    runEvents: (await items('readRunEvents', ['run'])).length,
    artifacts: (await items('listArtifacts', ['scope'])).map((a) => a.artifactId),
    conversation: (await call('loadConversation', ['conv']))?.revision ?? null,
  });
}

/** Writes one of everything, so that a refused call has something to change. */
export async function seed(call) {
  await call('append', ['wf', [{ type: 'started', workflowType: 'order', runId: 'run', recordedAt: NOW }], 0]);
  await call('append', ['paused-wf', [{ type: 'started', workflowType: 'order', runId: 'r2', recordedAt: NOW },
    { type: 'paused', recordedAt: NOW + 1 }], 0]);
  await call('insertOutbox', [[ROW, { ...ROW, dispatchKey: 'k-paused', workflowId: 'paused-wf' }]]);
  await call('registerNamespace', ['ns', 'explicit', NOW]);
  await call('setNamespacePlacement', ['ns', { region: 'eu' }]);
  await call('putPackage', [{ workflowType: 'order', contentHash: HASH, archive: new Uint8Array(3), deployedAt: NOW }]);
  await call('scheduleTimer', ['wf', 't', NOW + 1000]);
  await call('upsertVisibility', [{ workflowId: 'wf', runId: 'run', workflowType: 'order', status: 'running', startTime: NOW }]);
  await call('compareAndSwapCheckpoint', [{ checkpointId: 'cp', runId: 'run', revision: 0, state: { n: 1 }, updatedAt: NOW }, null]);
  await call('compareAndSwapEffect', [{ effectId: 'ef', capabilityId: 'mail', idempotencyKey: 'k', revision: 0,
    request: {}, status: { type: 'prepared' }, updatedAt: NOW }, null]);
  await call('recordRunEvent', [{ eventId: 'e1', runId: 'run', sequence: 1, recordedAt: NOW, data: {} }]);
  await call('putArtifact', [{ scope: 'scope', mediaType: 'text/plain', bytes: new Uint8Array(4) }, NOW]);
  await call('saveConversation', [{ conversationId: 'conv', revision: 0, formatVersion: 1, state: new Uint8Array(2), updatedAt: NOW }, null]);
}

function revoked() {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

function throwingGetter(key) {
  return Object.defineProperty({}, key, { enumerable: true, get() { throw new Error('getter'); } });
}

const throwingTraps = new Proxy({}, {
  ownKeys() { throw new Error('ownKeys'); },
  getPrototypeOf() { throw new Error('getPrototypeOf'); },
  get() { throw new Error('get'); },
});

function detached() {
  const bytes = new Uint8Array(8);
  structuredClone(bytes.buffer, { transfer: [bytes.buffer] });
  return bytes;
}

const LONG = 'x'.repeat(2_000_000);

/** A string's UTF-8 as a Uint8Array: never taken for the string. */
const utf8 = (text) => new TextEncoder().encode(text);

/**
 * The table: [name, method, args, code, field]. `field` is the exact path the error must
 * name. Cases marked `coreOnly` need values postMessage cannot carry to the worker as they are
 * (the client refuses them before sending, which `clientField` names).
 */
export const CASES = [
  // 1. a JS exception while the argument is read
  ['revoked Proxy as an id', 'head', () => [revoked()], 'INVALID_INPUT', 'workflowId'],
  ['revoked Proxy inside an array', 'namespaceLoads', () => [['ns', revoked()]], 'INVALID_INPUT', 'namespaces[1]'],
  ['throwing getter in an event', 'append', () => ['wf', [throwingGetter('type')], 1], 'INVALID_INPUT', 'events[0]'],
  ['Proxy whose traps throw as a filter', 'claimOutbox', () => [NOW, 10, throwingTraps], 'INVALID_INPUT', 'filter'],
  ['Proxy whose traps throw deep in a payload', 'append', () => ['wf', [{ ...EVENT, data: { a: [{ b: throwingTraps }] } }], 1],
    'INVALID_INPUT', 'events[0].data.a[0].b'],
  ['detached Uint8Array as outbox input', 'insertOutbox', () => [[{ ...ROW, dispatchKey: 'k-new', input: detached() }]],
    'INVALID_INPUT', 'rows[0].input'],
  ['an array of length 2^32-1', 'append', () => ['wf', new Array(2 ** 32 - 1), 1], 'INVALID_INPUT', 'events'],
  ['a 2 MB id', 'head', () => [LONG], 'INVALID_INPUT', 'workflowId'],
  ['a 2 MB id in a record', 'putPackage', () => [{ workflowType: LONG, contentHash: HASH, archive: new Uint8Array(1), deployedAt: 0 }],
    'INVALID_INPUT', 'record.workflowType'],
  ['a BigInt', 'dueTimers', () => [10n], 'INVALID_INPUT', 'asOf'],
  ['a Symbol in a payload', 'append', () => ['wf', [{ ...EVENT, data: { s: Symbol('s') } }], 1], 'INVALID_INPUT', 'events[0].data.s'],
  ['a Float64Array as bytes', 'putArtifact', () => [{ scope: 'scope', mediaType: 'm', bytes: new Float64Array(2) }, NOW],
    'INVALID_INPUT', 'artifact.bytes'],
  // 2. a missing required argument
  ['placement missing', 'setNamespacePlacement', () => ['ns'], 'INVALID_INPUT', 'placement'],
  ['events missing', 'append', () => ['wf'], 'INVALID_INPUT', 'events'],
  // 3. an array or typed array where a filter object belongs
  ['claim filter as an array', 'claimOutbox', () => [NOW, 10, [{ excludeWorkflows: ['paused-wf'] }]], 'INVALID_INPUT', 'filter'],
  ['visibility filter as an array', 'countVisibility', () => [['order']], 'INVALID_INPUT', 'filter'],
  ['workflow query as an array', 'queryWorkflows', () => [['failed']], 'INVALID_INPUT', 'query'],
  ['visibility filter as a Uint8Array', 'listVisibility', () => [new Uint8Array(2), 10, null], 'INVALID_INPUT', 'filter'],
  ['record as an array', 'upsertVisibility', () => [['wf', 'run']], 'INVALID_INPUT', 'record'],
  // 5. the same checks on every path
  ['empty namespace name on deprecate', 'deprecateNamespace', () => [''], 'INVALID_INPUT', 'name'],
  ['2,000-character namespace name on deprecate', 'deprecateNamespace', () => ['n'.repeat(2000)], 'INVALID_INPUT', 'name'],
  ['empty name on get', 'getNamespace', () => [''], 'INVALID_INPUT', 'name'],
  ['empty name on placement', 'setNamespacePlacement', () => ['', null], 'INVALID_INPUT', 'name'],
  ['bad hash on delete', 'deletePackage', () => ['order', 'NOT-HEX'], 'INVALID_INPUT', 'contentHash'],
  ['bad hash on get', 'getPackage', () => ['order', '0xdeadbeef'], 'INVALID_INPUT', 'contentHash'],
  ['empty type on route get', 'getPackageRoute', () => [''], 'INVALID_INPUT', 'workflowType'],
  ['empty artifact scope on delete', 'deleteArtifact', () => ['', ''], 'INVALID_INPUT', 'scope'],
  ['empty artifact id on get', 'getArtifact', () => ['scope', ''], 'INVALID_INPUT', 'artifactId'],
  ['empty scope on list', 'listArtifacts', () => [''], 'INVALID_INPUT', 'scope'],
  ['empty id on head', 'head', () => [''], 'INVALID_INPUT', 'workflowId'],
  ['2,000-character id on head', 'head', () => ['w'.repeat(2000)], 'INVALID_INPUT', 'workflowId'],
  ['empty id on readHistory', 'readHistory', () => [''], 'INVALID_INPUT', 'workflowId'],
  ['empty id on summary', 'workflowSummary', () => [''], 'INVALID_INPUT', 'workflowId'],
  ['empty id on run chain', 'readRunChain', () => [''], 'INVALID_INPUT', 'workflowId'],
  ['empty id on visibility', 'getVisibility', () => [''], 'INVALID_INPUT', 'workflowId'],
  ['empty key on row state', 'outboxRowState', () => [''], 'INVALID_INPUT', 'dispatchKey'],
  ['empty checkpoint id', 'loadCheckpoint', () => [''], 'INVALID_INPUT', 'checkpointId'],
  ['empty run id on checkpoints', 'listRunCheckpoints', () => [''], 'INVALID_INPUT', 'runId'],
  ['empty effect id', 'loadEffect', () => [''], 'INVALID_INPUT', 'effectId'],
  ['empty capability on find', 'findEffect', () => ['', 'k'], 'INVALID_INPUT', 'capabilityId'],
  ['empty run id on run events', 'readRunEvents', () => [''], 'INVALID_INPUT', 'runId'],
  ['empty conversation id', 'loadConversation', () => [''], 'INVALID_INPUT', 'conversationId'],
  ['a key of 3 bytes on rekey', 'rekey', () => [new Uint8Array(3)], 'INVALID_INPUT', 'key'],
  ['an empty passphrase on rekey', 'rekey', () => [''], 'INVALID_INPUT', 'key'],
  ['onProgress that is not a function', 'rekey', () => ['a passphrase', { onProgress: 'report' }], 'INVALID_INPUT', 'options.onProgress'],
  ['onProgress behind a throwing getter', 'rekey', () => ['a passphrase', throwingGetter('onProgress')], 'INVALID_INPUT', 'options.onProgress'],
  // 7. the field is the path from the argument
  ['bad hash in a package record', 'putPackage', () => [{ workflowType: 'order', contentHash: 'XYZ', archive: new Uint8Array(1), deployedAt: 0 }],
    'INVALID_INPUT', 'record.contentHash'],
  ['empty key in the fourth row', 'insertOutbox', () => [[1, 2, 3, 4].map((i) => ({ ...ROW, dispatchKey: i === 4 ? '' : `k${i}` }))],
    'INVALID_INPUT', 'rows[3].dispatchKey'],
  ['empty key in an outbox row beside an append', 'appendWithOutbox', () => ['wf', [EVENT], 1, [{ ...ROW, dispatchKey: '' }]],
    'INVALID_INPUT', 'outbox[0].dispatchKey'],
  ['empty artifact scope', 'putArtifact', () => [{ scope: '', mediaType: 'm', bytes: new Uint8Array(1) }, NOW], 'INVALID_INPUT', 'artifact.scope'],
  ['empty checkpoint id in a record', 'compareAndSwapCheckpoint', () => [{ checkpointId: '', revision: 0, state: {}, updatedAt: 0 }, null],
    'INVALID_INPUT', 'checkpoint.checkpointId'],
  ['empty run id in a run event', 'recordRunEvent', () => [{ eventId: 'e2', runId: '', sequence: 2, recordedAt: 0 }], 'INVALID_INPUT', 'event.runId'],
  ['empty conversation id in a state', 'saveConversation', () => [{ conversationId: '', revision: 0, formatVersion: 1, state: new Uint8Array(1), updatedAt: 0 }, null],
    'INVALID_INPUT', 'state.conversationId'],
  ['empty effect id in a record', 'compareAndSwapEffect', () => [{ effectId: '', capabilityId: 'c', revision: 0, request: {}, status: { type: 'prepared' }, updatedAt: 0 }, null],
    'INVALID_INPUT', 'record.effectId'],
  ['empty workflow id in a visibility record', 'upsertVisibility', () => [{ workflowId: '', runId: 'r', workflowType: 't', status: 's', startTime: 0 }],
    'INVALID_INPUT', 'record.workflowId'],
  ['unknown field in an effect status', 'compareAndSwapEffect', () => [{ effectId: 'ef2', capabilityId: 'c', revision: 0, request: {},
    status: { type: 'completed', output: 1, junk: 1 }, updatedAt: 0 }, null], 'INVALID_INPUT', 'record.status.junk'],
  ['unknown field beside a payload-free effect status', 'compareAndSwapEffect', () => [{ effectId: 'ef2', capabilityId: 'c', revision: 0,
    request: {}, status: { type: 'prepared', junk: 1 }, updatedAt: 0 }, null], 'INVALID_INPUT', 'record.status.junk'],
  ['empty name in a namespace record', 'putNamespace', () => [{ name: '', origin: 'explicit', state: 'active', createdAt: 0, lastSeen: 0 }],
    'INVALID_INPUT', 'record.name'],
  // Copying from a detached array throws in JS; the import must refuse it before it copies.
  ['a detached array as a database file', 'importDatabase', () => [detached(), null], 'INVALID_INPUT', 'bytes'],
  // 8. a Uint8Array where a string belongs, on every path
  ['bytes as a workflow id', 'append', () => [utf8('wb'), [EVENT], 0], 'INVALID_INPUT', 'workflowId'],
  ['bytes as an id to read', 'head', () => [utf8('wf')], 'INVALID_INPUT', 'workflowId'],
  ['bytes as an event name', 'append', () => ['wf', [{ ...EVENT, name: utf8('tick') }], 1], 'INVALID_INPUT', 'events[0].name'],
  ['bytes as an event type', 'append', () => ['wf', [{ ...EVENT, type: utf8('custom') }], 1], 'INVALID_INPUT', 'events[0].type'],
  ['bytes as a record field', 'putPackage', () => [{ workflowType: utf8('order'), contentHash: HASH, archive: new Uint8Array(1), deployedAt: 0 }],
    'INVALID_INPUT', 'record.workflowType'],
  ['bytes as a claim scope', 'claimOutbox', () => [NOW, 10, { scope: { namespace: utf8('ns') } }], 'INVALID_INPUT', 'filter.scope.namespace'],
  ['bytes as an excluded workflow', 'claimOutbox', () => [NOW, 10, { excludeWorkflows: [utf8('paused-wf')] }], 'INVALID_INPUT',
    'filter.excludeWorkflows[0]'],
  ['bytes as a namespace origin', 'registerNamespace', () => ['ns9', utf8('explicit'), NOW], 'INVALID_INPUT', 'origin'],
  ['bytes as an artifact scope', 'putArtifact', () => [{ scope: utf8('scope'), mediaType: 'm', bytes: new Uint8Array(1) }, NOW],
    'INVALID_INPUT', 'artifact.scope'],
  ['bytes as a request id', 'requestOutcome', () => [utf8('req')], 'INVALID_INPUT', 'requestId'],
  ['bytes as an id inside a step', 'commit', () => [{ operations: [{ op: 'scheduleTimer', workflowId: utf8('wf'), timerId: 't9', fireAt: NOW }] }],
    'INVALID_INPUT', 'step.operations[0].workflowId'],
  ['bytes as a step request id', 'commit', () => [{ requestId: utf8('req'), operations: [{ op: 'cancelTimer', workflowId: 'wf', timerId: 't' }] }],
    'INVALID_INPUT', 'step.requestId'],
  ['bytes as an operation name', 'commit', () => [{ operations: [{ op: utf8('cancelTimer'), workflowId: 'wf', timerId: 't' }] }],
    'INVALID_INPUT', 'step.operations[0].op'],
  ['bytes as a row key inside a step', 'commit', () => [{ operations: [{ op: 'insertOutbox', rows: [{ ...ROW, dispatchKey: utf8('k9') }] }] }],
    'INVALID_INPUT', 'step.operations[0].rows[0].dispatchKey'],
  // 9. inside a step, operations are read as objects, field by field, as methods read them
  ['claim filter as an array inside a step', 'commit', () => [{ operations: [{ op: 'claimOutbox', now: NOW, limit: 10, filter: [] }] }],
    'INVALID_INPUT', 'step.operations[0].filter'],
  ['claim scope as an array', 'claimOutbox', () => [NOW, 10, { scope: ['ns'] }], 'INVALID_INPUT', 'filter.scope'],
  ['checkpoint as an array inside a step', 'commit', () => [{ operations: [{ op: 'compareAndSwapCheckpoint',
    checkpoint: ['cp9', 'run', 0, {}, NOW] }] }], 'INVALID_INPUT', 'step.operations[0].checkpoint'],
  ['an operation as an array', 'commit', () => [{ operations: [['cancelTimer', 'wf', 't']] }], 'INVALID_INPUT', 'step.operations[0]'],
  ['an operation without op', 'commit', () => [{ operations: [{ workflowId: 'wf', timerId: 't' }] }], 'INVALID_INPUT', 'step.operations[0].op'],
  ['an unknown operation', 'commit', () => [{ operations: [{ op: 'dropEverything' }] }], 'INVALID_INPUT', 'step.operations[0].op'],
  ['an unknown field in an operation', 'commit', () => [{ operations: [{ op: 'cancelTimer', workflowId: 'wf', timerId: 't', junk: 1 }] }],
    'INVALID_INPUT', 'step.operations[0].junk'],
  ['a wrong type deep in an operation', 'commit', () => [{ operations: [{ op: 'upsertVisibility',
    record: { workflowId: 'wf', runId: 'run', workflowType: 'order', status: 'running', startTime: 'soon' } }] }],
    'INVALID_INPUT', 'step.operations[0].record.startTime'],
  // 10. a field named by its path inside the operation, and the same limits on every path
  ['empty key in an outbox row inside a step', 'commit', () => [{ operations: [{ op: 'insertOutbox', rows: [{ ...ROW, dispatchKey: '' }] }] }],
    'INVALID_INPUT', 'step.operations[0].rows[0].dispatchKey'],
  ['empty checkpoint id inside a step', 'commit', () => [{ operations: [{ op: 'compareAndSwapCheckpoint',
    checkpoint: { checkpointId: '', revision: 0, state: {}, updatedAt: 0 } }] }], 'INVALID_INPUT', 'step.operations[0].checkpoint.checkpointId'],
  ['a 2,000-character workflow type in a query', 'queryWorkflows', () => [{ workflowType: 't'.repeat(2000) }], 'INVALID_INPUT', 'query.workflowType'],
  ['an empty workflow type in a query', 'queryWorkflows', () => [{ workflowType: '' }], 'INVALID_INPUT', 'query.workflowType'],
];

/** A function cannot cross postMessage: the client refuses it, naming the path. */
export const CLIENT_ONLY = [
  ['a function in a payload', 'append', () => ['wf', [{ ...EVENT, data: { f: () => 1 } }], 1], 'INVALID_INPUT', 'events[0].data.f'],
];

/** Runs the table; returns the failures (empty when every case held). */
export async function runTable(call, { client }) {
  const failures = [];
  await seed(call);
  const cases = client ? [...CASES, ...CLIENT_ONLY] : CASES;
  for (const [name, method, args, code, field] of cases) {
    const before = await snapshot(call);
    let outcome;
    try {
      outcome = { resolved: await call(method, args()) };
    } catch (error) {
      outcome = { code: error?.code, field: error?.field, message: String(error?.message), isRunStoreError: error?.name === 'RunStoreError' };
    }
    const expectation = outcome.code === code && outcome.field === field;
    if (!expectation || !outcome.isRunStoreError) failures.push({ name, expected: { code, field }, outcome });
    else if (outcome.message.length > 600) failures.push({ name, problem: `message of ${outcome.message.length} characters` });
    const after = await snapshot(call);
    if (after !== before) failures.push({ name, problem: 'the store changed', before, after });
  }
  return failures;
}

/** How a call settled: `{ value }` or `{ code, field, name }` of what it threw. */
async function settle(run) {
  try {
    return { value: await run() };
  } catch (error) {
    return { code: error?.code, field: error?.field, name: error?.name, message: String(error?.message).slice(0, 200) };
  }
}

/** A copy of `bytes` whose own `keys` (its length, buffer and type tag) are getters that throw. */
function withThrowingGetters(bytes, keys = ['length', 'byteLength', 'byteOffset', 'buffer', Symbol.toStringTag]) {
  const copy = new Uint8Array(bytes);
  for (const key of keys) {
    Object.defineProperty(copy, key, { get() { throw new Error(`getter ${String(key)}`); } });
  }
  return copy;
}

/**
 * Keys the store's answers and errors have: a setter of one of these names on
 * `Object.prototype` (or an index on `Array.prototype`) that throws must change nothing, as
 * must an argument whose getters throw where the store reads internal slots.
 */
const ANSWER_KEYS = ['head', 'items', 'nextCursor', 'outcomes', 'replayed', 'op', 'bytes', 'code', 'field', 'name', 'schemaVersion'];

/** Runs `run` with throwing setters (and getters answering undefined) for `keys` on `target`. */
async function withTraps(target, keys, run) {
  const saved = keys.map((key) => [key, Object.getOwnPropertyDescriptor(target, key)]);
  for (const key of keys) {
    Object.defineProperty(target, key, {
      configurable: true,
      get() { return undefined; },
      set() { throw new Error(`setter ${key}`); },
    });
  }
  try {
    return await run();
  } finally {
    for (const [key, descriptor] of saved) {
      if (descriptor) Object.defineProperty(target, key, descriptor);
      else delete target[key];
    }
  }
}

/**
 * What a caller passes or does to JS built-ins never leaves the store unusable: an export
 * whose getters throw imports as the bytes it holds, and with setters on Object.prototype and
 * Array.prototype every answer and error is whole (checked with them removed). Prototype
 * setters only through runstore/core: the page's client is the page's own code. Returns the
 * failures.
 */
export async function runBuiltinAttacks(call, { client, open, name }) {
  const failures = [];
  const expect = (name, ok, outcome) => {
    if (!ok) failures.push({ name, outcome });
  };
  const exported = await call('exportDatabase', []);
  for (const keys of [['length'], undefined]) {
    const imported = await settle(() => call('importDatabase', [withThrowingGetters(exported, keys), null]));
    expect(`import of an export whose ${keys ? 'length' : 'getters'} throw`, imported.value?.schemaVersion >= 1, imported);
  }
  const artifact = await settle(() => call('putArtifact', [{ scope: 'scope', mediaType: 'm', bytes: withThrowingGetters(utf8('getters')) }, NOW]));
  expect('an artifact whose getters throw', typeof artifact.value?.artifactId === 'string', artifact);
  const afterImport = await settle(() => call('head', ['wf']));
  expect('a call after them', afterImport.value === 1, afterImport);
  if (client) return failures;

  const head = await call('head', ['trapped']);
  const answers = await withTraps(Object.prototype, ANSWER_KEYS, () => withTraps(Array.prototype, ['0', '1'], async () => ({
    step: await settle(() => call('commit', [{ operations: [{ op: 'append', workflowId: 'trapped', expectedSeq: head, events: [EVENT] }] }])),
    page: await settle(() => call('listWorkflowIds', [{ limit: 2 }])),
    history: await settle(() => call('readHistory', ['trapped'])),
    artifact: await settle(() => call('getArtifact', ['scope', artifact.value.artifactId])),
    refused: await settle(() => call('head', [''])),
    imported: await settle(() => call('importDatabase', [exported, null])),
  })));
  expect('a step with setters named as its answer', answers.step.value?.outcomes?.[0]?.head === head + 1
    && answers.step.value.replayed === false && answers.step.value.outcomes[0].op === 'append'
    && Object.hasOwn(answers.step.value, 'outcomes'), answers.step);
  expect('a page with setters on its keys and items', answers.page.value?.items?.length === 2
    && typeof answers.page.value.items[0] === 'string' && Object.hasOwn(answers.page.value, 'nextCursor'), answers.page);
  expect('a history with setters on its keys', answers.history.value?.items?.length === head + 1, answers.history);
  expect('bytes with setters on their key', answers.artifact.value?.bytes instanceof Uint8Array
    && answers.artifact.value.bytes.length === 7, answers.artifact);
  expect('an error with setters named as its fields', answers.refused.code === 'INVALID_INPUT' && answers.refused.field === 'workflowId'
    && answers.refused.name === 'RunStoreError', answers.refused);
  expect('an import with setters named as its answer', answers.imported.value?.schemaVersion >= 1, answers.imported);
  // A second open of the store's name is refused at once, also when a setter takes the
  // option that says not to wait for the store's lock.
  const swallowed = Object.getOwnPropertyDescriptor(Object.prototype, 'ifAvailable');
  Object.defineProperty(Object.prototype, 'ifAvailable', { configurable: true, set() {}, get() { return undefined; } });
  const opening = Date.now();
  const second = await settle(() => open(name, { persistence: 'opfs' })).finally(() => {
    if (swallowed) Object.defineProperty(Object.prototype, 'ifAvailable', swallowed);
    else delete Object.prototype.ifAvailable;
  });
  const waited = Date.now() - opening;
  await second.value?.close();
  expect('a second open with a setter on its lock option', second.code === 'BUSY' && waited < 2000, { ...second, waited });
  const afterTraps = await settle(() => call('head', ['trapped']));
  expect('a call after them', afterTraps.value === head + 1 || afterTraps.value === 0, afterTraps);
  return failures;
}

/** The same exception thousands of times; the store must keep answering. */
export async function runRepeated(call, times) {
  const proxy = revoked();
  let deep = throwingTraps;
  for (let level = 0; level < 60; level++) deep = { d: deep };
  let wrong = 0;
  for (let i = 0; i < times; i++) {
    for (const args of [[proxy], [deep]]) {
      try {
        await call('head', args);
        wrong++;
      } catch (error) {
        if (error.code !== 'INVALID_INPUT' || !String(error.field).startsWith('workflowId')) wrong++;
      }
    }
  }
  return { wrong, head: await call('head', ['wf']) };
}

/** A value read once: a getter that answers 1 and then NaN, a string and then a lone surrogate. */
export async function runReadOnce(call) {
  let reads = 0;
  const data = Object.defineProperty({}, 'x', {
    enumerable: true,
    get() { reads++; return reads === 1 ? 1 : NaN; },
  });
  let textReads = 0;
  Object.defineProperty(data, 's', {
    enumerable: true,
    get() { textReads++; return textReads === 1 ? 'ok' : '\uD800'; },
  });
  const head = await call('head', ['once']);
  await call('append', ['once', [{ ...EVENT, data }], head]);
  const stored = (await call('readHistory', ['once'])).items.at(-1).data;
  return { stored, reads, textReads };
}

// ----- the property test -----

/** A small seeded generator (mulberry32), so that a failure can be replayed from its seed. */
export function random(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (items) => items[int(items.length)] };
}

/** Valid arguments per method, the shapes the mutations start from. */
function validArgs(r, exported) {
  const id = () => r.pick(['wf', 'paused-wf', 'x', `id-${r.int(5)}`]);
  return {
    append: ['wf2', [EVENT], 0],
    appendWithOutbox: ['wf3', [EVENT], 0, [{ ...ROW, dispatchKey: `k-${r.int(9)}` }]],
    readHistory: [id()], readHistoryFrom: [id(), 1], head: [id()],
    listWorkflowIds: [], listActive: [], listPaused: [], workflowSummary: ['wf'],
    queryWorkflows: [{ status: 'running' }, { limit: 5 }], readRunChain: ['wf'], findUndecodableEvent: [],
    scheduleTimer: ['wf', 't2', NOW], dueTimers: [NOW], cancelTimer: ['wf', 'none'], listTimers: [],
    insertOutbox: [[{ ...ROW, dispatchKey: `k-${r.int(9)}` }]],
    claimOutbox: [NOW, 1, { excludeWorkflows: ['paused-wf'] }],
    completeOutbox: ['k-none', 0], completeOutboxBatch: [[{ dispatchKey: 'k-none', claimToken: 0 }]],
    retryOutbox: ['k-none', 0, 2, NOW], failOutbox: ['k-none', 0, 'gave up'], cancelWorkflowOutbox: ['none'],
    rearmStaleClaims: [0, NOW, 5], listStaleClaims: [0, { limit: 5 }], listUnsettledWorkflows: [],
    namespaceLoads: [['ns']], claimableRoutes: [NOW], outboxRowState: ['k-wf'], listOutbox: ['pending', { limit: 10 }],
    upsertVisibility: [{ workflowId: 'wf', runId: 'run', workflowType: 'order', status: 'running', startTime: NOW, searchAttributes: { a: 1 } }],
    getVisibility: ['wf'], listVisibility: [{ workflowType: 'order' }, 10, null],
    countVisibility: [{ search: [{ key: 'a', op: 'eq', value: 1 }] }],
    registerNamespace: ['ns2', 'explicit', NOW],
    putNamespace: [{ name: 'ns3', origin: 'worker', state: 'active', placement: { r: 1 }, createdAt: NOW, lastSeen: NOW }],
    getNamespace: ['ns'], listNamespaces: [], setNamespacePlacement: ['ns', { region: 'us' }], deprecateNamespace: ['none'],
    putPackage: [{ workflowType: 'order', contentHash: HASH, archive: new Uint8Array(2), deployedAt: NOW }],
    putPackageForTypes: [{ workflowType: 'order', contentHash: HASH, archive: new Uint8Array(2), deployedAt: NOW }, ['order']],
    getPackage: ['order', HASH], listPackages: [], deletePackage: ['none', HASH], setPackageRoute: ['order', HASH],
    listPackageRoutes: [], getPackageRoute: ['order'],
    loadCheckpoint: ['cp'],
    compareAndSwapCheckpoint: [{ checkpointId: 'cp2', runId: 'run', revision: 0, state: { n: 1 }, updatedAt: NOW }, null],
    listRunCheckpoints: ['run'], loadEffect: ['ef'], findEffect: ['mail', 'k'],
    compareAndSwapEffect: [{ effectId: 'ef3', capabilityId: 'mail', revision: 0, request: { to: 'a' }, status: { type: 'completed', output: 1 }, updatedAt: NOW }, null],
    listUnresolvedEffects: [], listEffects: ['prepared', { limit: 10 }],
    recordRunEvent: [{ eventId: `e-${r.int(99)}`, runId: 'run', sequence: 2 + r.int(50), recordedAt: NOW, data: { a: 1 } }],
    readRunEvents: ['run'], listRunIds: [],
    putArtifact: [{ scope: 'scope', mediaType: 'text/plain', name: 'n', bytes: new Uint8Array(3), idempotencyKey: 'ik' }, NOW],
    getArtifact: ['scope', 'none'], listArtifacts: ['scope'], deleteArtifact: ['scope', 'none'], purgeExpiredArtifacts: [0],
    loadConversation: ['conv'],
    saveConversation: [{ conversationId: 'conv2', revision: 0, formatVersion: 1, state: new Uint8Array(1), updatedAt: NOW }, null],
    commit: [r.pick([
      { requestId: `req-${r.int(9)}`, operations: [{ op: 'scheduleTimer', workflowId: 'wf', timerId: 't3', fireAt: NOW }] },
      { operations: [{ op: 'insertOutbox', rows: [{ ...ROW, dispatchKey: `k-${r.int(9)}` }] }] },
      { operations: [{ op: 'claimOutbox', now: NOW, limit: 1, filter: { excludeWorkflows: ['paused-wf'], scope: { namespace: 'ns' } } }] },
      { requestId: `req-cp-${r.int(9)}`, operations: [{ op: 'compareAndSwapCheckpoint',
        checkpoint: { checkpointId: 'cp4', runId: 'run', revision: 0, state: { n: 1 }, updatedAt: NOW }, expectedRevision: null }] },
      { operations: [
        { op: 'append', workflowId: `wf-${r.int(9)}`, expectedSeq: 0, events: [{ ...EVENT, type: 'started', workflowType: 'order', runId: 'r', name: undefined }] },
        { op: 'putArtifact', artifact: { scope: 'scope', mediaType: 'text/plain', bytes: new Uint8Array(2) }, now: NOW },
        { op: 'registerNamespace', name: `ns-${r.int(9)}`, origin: 'start', now: NOW },
      ] },
    ])],
    requestOutcome: [`req-${r.int(9)}`], purgeWorkflows: [NOW, 10], changesSince: [r.int(20), 1 + r.int(100)], storageStats: [], vacuum: [],
    syncTarget: ['ns'],
    syncWorkflows: ['ns', r.pick([{ select: 'all' }, { select: 'changed', after: 0, through: 9 }, { select: 'inState', state: 'conflict' }]), { limit: 5 }],
    syncHeads: ['ns', ['wf', 'x']],
    // Never a runstore database, or the store as it was seeded (which brings it back to that).
    exportDatabase: [r.pick([undefined, { plain: true }])], importDatabase: [r.next() < 0.5 ? new Uint8Array(512) : exported, null],
  };
}

/** Random values, plain and exotic. `client` leaves out what postMessage refuses anyway. */
function randomValue(r, depth, client) {
  const leaves = [
    () => undefined, () => null, () => r.next() < 0.5, () => r.int(2 ** 31) - 2 ** 30, () => r.next() * 1e6,
    () => NaN, () => Infinity, () => -0, () => 2 ** 53 + 2, () => '', () => 'x'.repeat(r.int(3000)),
    () => '\uD800', () => 'a\u0000b', () => HASH, () => 'wf', () => new Uint8Array(r.int(4)),
    () => new Float32Array(2), () => new Date(0), () => new Map([['a', 1]]), () => /re/,
    () => detached(), () => 10n, () => new ArrayBuffer(2), () => new DataView(new ArrayBuffer(2)),
    // A string's bytes where the string belongs, and bytes whose own getters throw.
    () => utf8(r.pick(['wf', 'k-wf', 'ns', 'order', 'scope', HASH])), () => withThrowingGetters(utf8('wf')),
  ];
  const exotic = [() => revoked(), () => throwingTraps, () => throwingGetter('k'), () => Symbol('s'), () => () => 1,
    () => Object.create({ inherited: 1 }), () => Object.create(null), () => new Proxy({ a: 1 }, {}),
    () => new Proxy([1], {}), () => { const o = {}; o.self = o; return o; }];
  const builders = [...leaves, ...(client ? [] : exotic)];
  if (depth < 4 && r.next() < 0.3) {
    const items = Array.from({ length: r.int(4) }, () => randomValue(r, depth + 1, client));
    return r.next() < 0.5 ? items : Object.fromEntries(items.map((v, i) => [r.pick(['a', 'type', 'workflowId', `k${i}`, '__proto__']), v]));
  }
  return r.pick(builders)();
}

/** The paths of every object or array inside `value`, with their parents. */
function places(value, path, out) {
  if (value && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    out.push(path);
    for (const key of Object.keys(value)) places(value[key], [...path, key], out);
  }
  return out;
}

/** `args` with one place changed: a field replaced, deleted or added, or a whole argument. */
function mutate(r, args, client) {
  const index = r.int(Math.max(args.length, 1));
  const copy = structuredClone(args);
  if (r.next() < 0.3 || copy.length === 0) {
    copy[index] = randomValue(r, 0, client);
    return { args: copy, index };
  }
  const targets = places(copy[index], [], []);
  if (targets.length === 0) {
    copy[index] = randomValue(r, 0, client);
    return { args: copy, index };
  }
  const path = r.pick(targets);
  const parent = path.reduce((v, k) => v[k], copy[index]);
  const keys = Object.keys(parent);
  const choice = r.next();
  if (choice < 0.2 && keys.length) delete parent[r.pick(keys)];
  else if (choice < 0.35) parent[r.pick(['unknownField', 'extra', '0'])] = randomValue(r, 2, client);
  else if (keys.length) parent[r.pick(keys)] = randomValue(r, 1, client);
  return { args: copy, index };
}

const CODES = new Set(['SEQUENCE_CONFLICT', 'CONFLICT', 'IDEMPOTENCY_CONFLICT', 'NOT_FOUND', 'INVALID_INPUT',
  'SERIALIZATION', 'BUSY', 'STORAGE_FULL']);

/**
 * Calls random methods with mutated and random arguments until `ms` have passed. Every call
 * must settle, fail only with a RunStoreError of an expected code whose INVALID_INPUT field
 * starts with the changed argument's name, and leave the store unchanged when it fails.
 */
export async function runProperty(call, { seed, ms, client, parameters }) {
  const r = random(seed);
  // Not rekey: with any key it encrypts the (plain) hostile store, a success the rest of the
  // run could not open again. Its refusals are cases of the table.
  const methods = Object.keys(parameters).filter((method) => method !== 'rekey');
  const failures = [];
  let calls = 0;
  let trapped = 0;
  const exported = await call('exportDatabase', []);
  const started = Date.now();
  while (Date.now() - started < ms && failures.length < 20) {
    const method = r.pick(methods);
    const valid = validArgs(r, exported)[method];
    const { args, index } = r.next() < 0.1
      ? { args: valid.map(() => randomValue(r, 0, client)), index: -1 }
      : mutate(r, valid, client);
    const before = await snapshot(call);
    calls++;
    // Through runstore/core, now and then with setters named like the store's answers on
    // the prototypes its answers and errors are made from.
    const traps = !client && r.next() < 0.1
      ? [r.pick([Object.prototype, Array.prototype]), [r.pick([...ANSWER_KEYS, '0', 'message', 'entity', 'revision'])]]
      : null;
    if (traps) trapped++;
    try {
      await (traps ? withTraps(...traps, () => call(method, args)) : call(method, args));
    } catch (error) {
      const names = parameters[method];
      const field = String(error?.field);
      // The changed argument, or another one a rule between them names (a record's revision
      // against the expected one).
      const named = names.some((n) => field === n || field.startsWith(`${n}.`) || field.startsWith(`${n}[`));
      const problem = error?.name !== 'RunStoreError' ? 'not a RunStoreError'
        : !CODES.has(error.code) ? `code ${error.code}`
        : error.code === 'INVALID_INPUT' && !named ? `field ${field} names no argument of ${method}`
        : String(error.message).length > 600 ? 'message too long'
        : (await snapshot(call)) !== before ? 'a refused call changed the store'
        : null;
      if (problem) failures.push({ method, index, problem, code: error?.code, message: String(error?.message).slice(0, 300) });
    }
  }
  return { calls, trapped, failures };
}

const OPEN_CODES = new Set(['INVALID_INPUT', 'BUSY', 'STORAGE_FULL']);

/**
 * `open(name, options)` with random names and options (a valid persistence is one of `media`,
 * those this engine has) until `ms` have passed: each open resolves (and the store then
 * closes) or fails with a RunStoreError of an expected code whose INVALID_INPUT field names
 * the name or the options. Returns the counts and the failures.
 */
export async function runOpenProperty(open, { seed, ms, client, media = ['memory', 'opfs'] }) {
  const r = random(seed ^ 0x0fe4);
  const failures = [];
  let calls = 0;
  let opened = 0;
  const started = Date.now();
  while (Date.now() - started < ms && failures.length < 20) {
    const valid = [r.pick(['fuzz-open-a', 'fuzz-open-b']), { persistence: r.pick(media), durability: r.pick(['full', 'relaxed']) }];
    const { args } = r.next() < 0.2 ? { args: valid.map(() => randomValue(r, 0, client)) } : mutate(r, valid, client);
    calls++;
    try {
      const store = await open(...args);
      opened++;
      await store.close();
    } catch (error) {
      const field = String(error?.field);
      const problem = error?.name !== 'RunStoreError' ? `not a RunStoreError: ${error}`
        : !OPEN_CODES.has(error.code) ? `code ${error.code}`
        : error.code === 'INVALID_INPUT' && !/^(name|options)([.[]|$)/.test(field) ? `field ${field}`
        : null;
      if (problem) failures.push({ problem, code: error?.code, message: String(error?.message).slice(0, 300) });
    }
  }
  return { calls, opened, failures };
}
