// Sync with a runstore sync server (src/server): push the journal appends the server has not
// got, pull the ones it has that this store lacks, per workflow, under the expected head.
//
// What this store and the server agree on is kept in the store's own tables, per target (the
// server's namespace: `<namespace>@<url>`): a client id, the cursor into the namespace's change
// feed, and per workflow the head both hold (events 1..head are the same on both) and whether
// they are in step, apart (a conflict) or the workflow was purged here (a tombstone). Every
// append takes a change mark once a target exists, so a pass reads only the workflows appended
// to since the last pass (`syncWorkflows`), and pulled events are appended together with the
// new agreement in one step. Pushes carry request ids derived from what they push, events
// included, so a push re-sent after a lost answer, a crash or a server restart is answered from
// the server's request log, and a push of other events (this store rolled back) is a new
// request, which the server answers with SEQUENCE_CONFLICT.
//
// A workflow written on both sides since they last agreed is never merged: its push is
// answered with SEQUENCE_CONFLICT, reported in the summary with both heads and the server's
// events, and left as it is on both sides. Every answer of the server is checked before it is
// used: an answer of another shape is SERIALIZATION, an error code this package does not know
// is BACKEND (with the server's code as `serverCode`).
import { ErrorCode, RunStoreError, toRunStoreError } from './errors.js';

/** Most events one push carries (fewer when the server refuses a body that large). */
const PUSH_EVENTS = 500;
/** Page size of local reads; segments per pull page (one step holds them and the save). */
const PAGE = 1000;
const PULL_SEGMENTS = 500;
/** How long a live sync's pull waits on the server for a change. */
const LIVE_WAIT_MS = 25_000;
/** A live sync's pause after a failed pass, doubled up to the maximum while failures last. */
const RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
/** How often a live sync looks at its conflicts again (a single pass always does). */
const CONFLICT_CHECK_MS = 60_000;

/**
 * Runs one sync pass of `store` with the server, or with `live: true` keeps syncing until
 * `signal` aborts. Resolves to the (last) pass's summary.
 * @param {object} store a RunStore client or a RunStoreCore
 * @param {import('./index').SyncOptions} options
 */
export async function syncStore(store, options) {
  const settings = readOptions(options);
  if (!settings.live) return syncPass(store, settings, true);
  return syncLive(store, settings);
}

async function syncLive(store, settings) {
  const { signal } = settings;
  let summary = null;
  let pause = RETRY_MS;
  // A local append during a pass means another pass; during the wait, it ends the wait (and
  // the server's long-poll with it). Each pass reads only what changed since the last: the
  // store's change marks keep that, so a notice lost with a leader that went away delays a
  // push until the next pass, never loses it. Conflicts are looked at again by the first
  // pass, after a failure, and once per CONFLICT_CHECK_MS.
  let wait = null;
  let lastConflictCheck = 0;
  let appended = false;
  const onAppend = () => {
    appended = true;
    wait?.abort();
  };
  const unsubscribe = typeof store.subscribe === 'function' ? store.subscribe({ areas: ['journal'] }, onAppend) : () => {};
  const onAbort = () => wait?.abort();
  signal?.addEventListener('abort', onAbort);
  try {
    while (!signal?.aborted) {
      try {
        appended = false;
        const checkConflicts = Date.now() - lastConflictCheck >= CONFLICT_CHECK_MS;
        summary = await syncPass(store, settings, checkConflicts);
        if (checkConflicts) lastConflictCheck = Date.now();
        settings.onProgress({ type: 'synced', summary });
        pause = RETRY_MS;
        if (appended) continue;
        wait = new AbortController();
        await waitForServer(settings, summary.cursor, wait.signal);
      } catch (error) {
        if (signal?.aborted) break;
        if (wait?.signal.aborted) continue;
        settings.onProgress({ type: 'error', error: toRunStoreError(error) });
        lastConflictCheck = 0;
        await sleep(pause, signal);
        pause = Math.min(pause * 2, MAX_RETRY_MS);
      } finally {
        wait = null;
      }
    }
  } finally {
    unsubscribe();
    signal?.removeEventListener('abort', onAbort);
  }
  return summary;
}

/** Resolves when the server has changes after `cursor`, or its wait ended; `signal` ends it sooner. */
async function waitForServer(settings, cursor, signal) {
  await request({ ...settings, signal }, 'GET', `changes?after=${cursor}&limit=1&waitMs=${LIVE_WAIT_MS}`);
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/** The tail of each store object's passes: a pass waits for the one before it on the same store. */
const passesOf = new WeakMap();

/**
 * One pass, after the passes already asked for on the same store object (an app's live sync
 * and a workflow engine's passes, say): two at once would save the same heads, and one would
 * fail with CONFLICT.
 */
function syncPass(store, settings, checkConflicts) {
  const before = passesOf.get(store) ?? Promise.resolve();
  const pass = settledOr(before, settings.signal).then(() => passNow(store, settings, checkConflicts));
  // A pass whose signal ended its wait leaves the next one waiting for the pass before it.
  passesOf.set(store, Promise.allSettled([before, pass]).then(() => {})); // holding no pass's summary
  return pass;
}

/** Resolves once `promise` (one that never rejects) settles; rejects with `signal`'s reason if it aborts first. */
function settledOr(promise, signal) {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/**
 * One pass: push what changed here since the last pass (and, with `checkConflicts`, try the
 * workflows apart from the server again, reporting those still apart), then pull what changed
 * there.
 */
async function passNow(store, settings, checkConflicts) {
  const state = await SyncState.load(store, settings);
  const summary = { pushed: { workflows: 0, events: 0 }, pulled: { workflows: 0, events: 0 }, conflicts: [], cursor: state.cursor };
  const conflicted = new Set();
  const through = state.clock;
  const report = (workflowId, error) => {
    summary.conflicts.push(error);
    conflicted.add(workflowId);
    settings.onProgress({ type: 'conflict', workflowId, error });
  };
  for await (const workflow of state.toPush(store, checkConflicts)) {
    settings.signal?.throwIfAborted();
    const pushed = await pushWorkflow(store, settings, state, workflow);
    if (pushed instanceof RunStoreError) {
      report(workflow.workflowId, pushed);
    } else if (pushed > 0) {
      summary.pushed.workflows += 1;
      summary.pushed.events += pushed;
      settings.onProgress({ type: 'pushed', workflowId: workflow.workflowId, events: pushed, head: workflow.syncedHead });
    }
  }
  // Every workflow appended to up to the clock read at the start was handled.
  if (state.mark === null || through > state.mark) await state.save(store, { mark: through });
  const pulled = new Map();
  const pullPage = (after) => request(settings, 'GET', `changes?after=${after}&limit=${PULL_SEGMENTS}&events=true`).then((page) => checkSegments(page, after));
  // The next page is asked for as soon as this one says where it starts: the server reads and
  // sends it while this one is stored.
  let next = pullPage(state.cursor);
  try {
    for (;;) {
      settings.signal?.throwIfAborted();
      const page = await next;
      next = page.more ? pullPage(page.cursor) : null;
      for (const [workflowId, events] of await pullSegments(store, settings, state, page, conflicted)) {
        pulled.set(workflowId, (pulled.get(workflowId) ?? 0) + events);
      }
      if (!page.more) break;
    }
  } finally {
    next?.catch(() => {}); // a page asked for ahead of a failure is not waited for
  }
  if (settings.restorePurged) {
    for (const [workflowId, events] of await restorePurged(store, settings, state)) pulled.set(workflowId, events);
  }
  for (const [workflowId, events] of pulled) {
    summary.pulled.workflows += 1;
    summary.pulled.events += events;
    settings.onProgress({ type: 'pulled', workflowId, events, head: await store.head(workflowId) });
  }
  summary.cursor = state.cursor;
  return summary;
}

/**
 * Pushes the workflow's local events after the agreed head, under the lease `leases` names.
 * Resolves to the number of events pushed, or to the SEQUENCE_CONFLICT when the server's head
 * moved too (or the workflow was purged here and written again), or to the FENCED when the
 * server's lease on the workflow is not the one pushed under.
 */
async function pushWorkflow(store, settings, state, workflow) {
  const { workflowId } = workflow;
  const purgedConflict = (serverHead) => new RunStoreError('SEQUENCE_CONFLICT', `workflow ${workflowId} was purged here at head ${workflow.syncedHead} and written again: its new events are not pushed onto the server's history`, {
    workflowId, expected: workflow.syncedHead, actual: serverHead, localHead: workflow.localHead, serverHead, purged: true, serverEvents: [], serverEventsComplete: false,
  });
  // A tombstone at head 0 (a push's answer may have been lost before the purge): the new
  // events go to the server only if it holds nothing under this id.
  if (workflow.state === 'purged' && workflow.syncedHead > 0) return purgedConflict(workflow.syncedHead);
  const lease = await settings.leaseOf(workflowId);
  let pushed = 0;
  let limit = PUSH_EVENTS;
  for (;;) {
    const base = workflow.syncedHead;
    const local = await store.readHistoryFrom(workflowId, base + 1, { limit });
    if (local.items.length === 0) {
      // Nothing here past the agreed head: not apart from the server any more.
      if (workflow.state === 'conflict') await state.saveHead(store, workflow, base, 'synced');
      return pushed;
    }
    const events = local.items.map(withoutSeq);
    const requestId = await pushRequestId(state.clientId, workflowId, base, events);
    let answer;
    try {
      const body = { requestId, workflowId, expectedHead: base, events, ...(lease ? { lease } : {}) };
      answer = checkPush(await request(settings, 'POST', 'push', body), base + events.length);
    } catch (error) {
      // Another device runs the workflow (or this one lost its lease): nothing pushed, and the
      // workflow is left apart from the server, to be tried again (and reported) by later passes.
      // (One purged here and written again loses that mark: a later push onto a server history
      // under its id is still refused, as a SEQUENCE_CONFLICT.)
      if (error.code === 'FENCED') {
        await state.saveHead(store, workflow, workflow.syncedHead, 'conflict');
        return error;
      }
      if (error.code === 'INVALID_INPUT' && error.httpStatus === 413 && events.length > 1) {
        limit = Math.ceil(events.length / 2);
        continue;
      }
      if (error.code !== 'SEQUENCE_CONFLICT') throw error;
      // The server may hold these very events already (a push whose answer was lost before
      // its request id was known, or events pulled from it before): then they agree further.
      const same = commonLength(events, error.events.map(withoutSeq));
      if (same > 0 && (same === events.length || same === error.events.length)) {
        await state.saveHead(store, workflow, base + same, 'synced');
        continue;
      }
      if (workflow.state === 'purged') return purgedConflict(error.actual);
      await state.saveHead(store, workflow, base, 'conflict');
      const localHead = await store.head(workflowId);
      return new RunStoreError('SEQUENCE_CONFLICT', `workflow ${workflowId} was written here and on the server since head ${base}: local head ${localHead}, server head ${error.actual}`, {
        workflowId,
        expected: base,
        actual: error.actual,
        localHead,
        serverHead: error.actual,
        serverEvents: error.events,
        serverEventsComplete: error.eventsComplete,
      });
    }
    await state.saveHead(store, workflow, answer.head, 'synced');
    pushed += events.length;
    limit = PUSH_EVENTS;
  }
}

/**
 * Appends a page of the server's segments, each after the head this store agrees on, with the
 * new agreement and the page's cursor in one step. A workflow written here since (or apart, or
 * purged here) is left alone; a segment that starts past what this store holds (its earlier
 * events were not pulled) is completed from the workflow's events. Resolves to the events
 * pulled per workflow.
 */
async function pullSegments(store, settings, state, page, conflicted) {
  const ids = [...new Set(page.segments.map((s) => s.workflowId))];
  const known = new Map((ids.length ? await store.syncHeads(state.target, ids) : []).map((w) => [w.workflowId, w]));
  const plan = new Map();
  for (const segment of page.segments) {
    const workflow = plan.get(segment.workflowId)?.workflow ?? { ...known.get(segment.workflowId) };
    const idle = workflow.localHead === workflow.syncedHead && workflow.state !== 'conflict' && workflow.state !== 'purged';
    if (!idle || conflicted.has(workflow.workflowId) || segment.head <= workflow.syncedHead) continue;
    const events = segment.base <= workflow.syncedHead
      ? segment.events.slice(workflow.syncedHead - segment.base)
      : await eventsAfter(settings, workflow.workflowId, workflow.syncedHead, segment.head);
    const entry = plan.get(workflow.workflowId) ?? { workflow, from: workflow.syncedHead, expected: known.get(workflow.workflowId).state === null ? null : workflow.syncedHead, events: [] };
    entry.events.push(...events.map(withoutSeq));
    workflow.syncedHead += events.length;
    workflow.localHead = workflow.syncedHead;
    plan.set(workflow.workflowId, entry);
  }
  let entries = [...plan.values()];
  for (;;) {
    const operations = entries.map((e) => ({ op: 'append', workflowId: e.workflow.workflowId, events: e.events, expectedSeq: e.from }));
    const heads = entries.map((e) => ({ workflowId: e.workflow.workflowId, expected: e.expected, head: e.workflow.syncedHead, state: 'synced' }));
    try {
      await state.save(store, { cursor: page.cursor, heads }, operations);
      return new Map(entries.map((e) => [e.workflow.workflowId, e.events.length]));
    } catch (error) {
      // Written here meanwhile: that workflow is pushed (or reported) by the next pass.
      if (error.code !== 'SEQUENCE_CONFLICT' || !(error.operation < entries.length)) throw error;
      entries = entries.filter((_, i) => i !== error.operation);
    }
  }
}

/** The server's events of `workflowId` after `after`, page by page, up to `through` at least (all of them for Infinity). */
async function eventsAfter(settings, workflowId, after, through) {
  const events = [];
  for (let from = after; ;) {
    const page = checkEvents(await request(settings, 'GET', `workflows/${encodeURIComponent(workflowId)}/events?after=${from}&limit=${PAGE}`), from);
    events.push(...page.events);
    from += page.events.length;
    if (page.complete || page.events.length === 0 || from >= through) return events;
  }
}

/** Pulls back the whole server history of workflows purged here (the app asked for it). */
async function restorePurged(store, settings, state) {
  const restored = new Map();
  for await (const workflow of state.inState(store, 'purged')) {
    if (workflow.localHead > 0) continue;
    const events = (await eventsAfter(settings, workflow.workflowId, 0, Infinity)).map(withoutSeq);
    if (events.length === 0) continue;
    await state.save(store, { heads: [{ workflowId: workflow.workflowId, expected: workflow.syncedHead, head: events.length, state: 'synced' }] }, [
      { op: 'append', workflowId: workflow.workflowId, events, expectedSeq: 0 },
    ]);
    restored.set(workflow.workflowId, events.length);
  }
  return restored;
}

/** The sync state of one target, kept in the store (see the top of this file). */
class SyncState {
  constructor(target, stored, clientId) {
    this.target = target;
    this.clientId = clientId;
    this.cursor = stored.cursor;
    this.mark = stored.mark;
    this.clock = stored.clock;
  }

  static async load(store, settings) {
    const target = `${settings.namespace}@${settings.url}`;
    const stored = await store.syncTarget(target);
    if (stored.clientId !== null) return new SyncState(target, stored, stored.clientId);
    const state = new SyncState(target, stored, randomId());
    await state.adoptCheckpoint(store, settings);
    // The target is kept before anything is pushed: a push re-sent after a lost answer carries
    // the same client id, and a purge leaves tombstones for what may be on the server.
    await state.save(store, {});
    return state;
  }

  /**
   * A store synced by an earlier version kept its state in the checkpoint
   * `runstore.sync:<target>`: its client id, cursor and heads are taken over once.
   */
  async adoptCheckpoint(store, settings) {
    let old;
    try {
      old = (await store.loadCheckpoint(`runstore.sync:${this.target}`)).state;
    } catch (error) {
      if (error.code === 'NOT_FOUND') return;
      throw error;
    }
    if (!old || typeof old !== 'object') return;
    if (typeof old.clientId === 'string' && old.clientId !== '') this.clientId = old.clientId;
    const heads = Object.entries(old.heads ?? {}).filter(([id, head]) => id !== '' && Number.isSafeInteger(head) && head >= 0);
    const cursor = Number.isSafeInteger(old.cursor) && old.cursor >= 0 ? old.cursor : 0;
    await this.save(store, { cursor, heads: [] });
    for (let i = 0; i < heads.length; i += PAGE) {
      const chunk = heads.slice(i, i + PAGE).map(([workflowId, head]) => ({ workflowId, expected: null, head, state: 'synced' }));
      await this.save(store, { heads: chunk });
    }
    settings.signal?.throwIfAborted();
  }

  /**
   * The workflows to push: what changed since the last pass (every workflow that needs it on
   * a target's first pass), and with `conflicts` first the workflows apart from the server.
   */
  async* toPush(store, conflicts) {
    if (this.mark === null) {
      yield* this.pages(store, { select: 'all' });
      return;
    }
    const seen = new Set();
    if (conflicts) {
      for await (const workflow of this.inState(store, 'conflict')) {
        seen.add(workflow.workflowId);
        yield workflow;
      }
    }
    for await (const workflow of this.pages(store, { select: 'changed', after: this.mark, through: this.clock })) {
      if (!seen.has(workflow.workflowId)) yield workflow;
    }
  }

  inState(store, state) {
    return this.pages(store, { select: 'inState', state });
  }

  async* pages(store, selection) {
    let cursor = null;
    do {
      const page = await store.syncWorkflows(this.target, selection, { limit: PAGE, cursor });
      yield* page.items;
      cursor = page.nextCursor;
    } while (cursor);
  }

  /** Agrees on `head` for `workflow` (as read by this pass), in the given state. */
  async saveHead(store, workflow, head, state) {
    const expected = workflow.state === null ? null : workflow.syncedHead;
    await this.save(store, { heads: [{ workflowId: workflow.workflowId, expected, head, state }] });
    workflow.syncedHead = head;
    workflow.state = state;
  }

  /**
   * Stores `changes` (a new cursor, mark or heads) in one step with `operations` (none, or
   * pulled appends), each from the state this pass read: another pass of the same target that
   * saved first makes this one fail with CONFLICT, and nothing of the step is written.
   */
  async save(store, changes, operations = []) {
    const cursor = changes.cursor === undefined ? null : { from: this.cursor, to: changes.cursor };
    await store.commit({
      operations: [...operations, {
        op: 'saveSync', target: this.target, clientId: this.clientId, cursor, mark: changes.mark ?? null, heads: changes.heads ?? [],
      }],
    });
    if (changes.cursor !== undefined) this.cursor = changes.cursor;
    if (changes.mark !== undefined) this.mark = Math.max(this.mark ?? changes.mark, changes.mark);
  }
}

/**
 * The same push always gets the same request id, and any other push another: the id covers
 * the events themselves, not only where they go. A store rolled back (an import of an older
 * export, a power loss under `relaxed`, a copy of its file elsewhere) that pushes other events
 * at a head it pushed from before thus sends a new request, which the server answers with
 * SEQUENCE_CONFLICT, never with the replay of the first push.
 */
async function pushRequestId(clientId, workflowId, base, events) {
  const text = new TextEncoder().encode(`${workflowId}\n${base}\n${JSON.stringify(events)}`);
  // Outside a secure context there is no digest: a fresh id is safe too, only a retry of a
  // push whose answer was lost then ends in pushWorkflow's same-events check, not a replay.
  if (!globalThis.crypto?.subtle) return `${clientId}.${randomId()}`;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', text));
  const hex = Array.from(digest.subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('');
  return `${clientId}.${hex}`;
}

/** 128 random bits as hex (crypto.randomUUID exists only in secure contexts). */
function randomId() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

function withoutSeq({ seq, ...event }) {
  return event;
}

/** How many events the two lists share from their start. */
function commonLength(a, b) {
  let n = 0;
  while (n < a.length && n < b.length && canonical(a[n]) === canonical(b[n])) n += 1;
  return n;
}

/** JSON with object keys sorted, so equal events compare equal whatever their key order. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

// ----- the server's answers, checked before use -----

/** The answer's shape was not what the API promises: SERIALIZATION, naming what was wrong. */
function malformed(what, why) {
  return new RunStoreError('SERIALIZATION', `the sync server's answer to ${what} ${why}`);
}

const isCount = (value) => Number.isSafeInteger(value) && value >= 0;
const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Checks stored events numbered `after + 1`, `after + 2`, ... */
function checkEventList(events, after, what) {
  if (!Array.isArray(events)) throw malformed(what, 'has no list of events');
  events.forEach((event, i) => {
    if (!isObject(event) || event.seq !== after + 1 + i || typeof event.type !== 'string') {
      throw malformed(what, `holds an event that is not event ${after + 1 + i}`);
    }
  });
  return events;
}

function checkPush(answer, head) {
  if (!isObject(answer) || answer.head !== head || typeof answer.replayed !== 'boolean') {
    throw malformed('a push', `is not { head: ${head}, replayed }`);
  }
  return answer;
}

function checkSegments(answer, after) {
  const what = 'a pull';
  if (!isObject(answer) || !Array.isArray(answer.segments) || typeof answer.more !== 'boolean' || !isCount(answer.cursor) || answer.cursor < after) {
    throw malformed(what, 'is not { segments, cursor, more } past the cursor sent');
  }
  for (const segment of answer.segments) {
    if (!isObject(segment) || typeof segment.workflowId !== 'string' || segment.workflowId === '' || !isCount(segment.base) || !isCount(segment.head) || segment.head <= segment.base) {
      throw malformed(what, 'holds a segment that is not { workflowId, base, head > base, events }');
    }
    checkEventList(segment.events, segment.base, what);
    if (segment.events.length !== segment.head - segment.base) throw malformed(what, `holds a segment of ${segment.workflowId} without all its events`);
  }
  return answer;
}

function checkEvents(answer, after) {
  const what = 'a read of events';
  if (!isObject(answer) || !isCount(answer.head) || typeof answer.complete !== 'boolean') {
    throw malformed(what, 'is not { events, head, complete }');
  }
  checkEventList(answer.events, after, what);
  return answer;
}

/** The fields of an error answer this package reads, each only when of its type. */
const ERROR_FIELDS = {
  workflowId: 'string', expected: 'number', actual: 'number', entity: 'string', id: 'string', field: 'string', eventsComplete: 'boolean',
  holder: 'string', epoch: 'number', currentHolder: 'string', currentEpoch: 'number', expiresInMs: 'number',
};

/** The error a server's error answer means: its code if documented, else BACKEND. */
function answerError(answer, status) {
  const known = isObject(answer) && typeof answer.code === 'string' && Object.hasOwn(ErrorCode, answer.code);
  const fields = { httpStatus: status };
  if (isObject(answer)) {
    for (const [key, type] of Object.entries(ERROR_FIELDS)) {
      if (typeof answer[key] === type || (type === 'number' && answer[key] === null)) fields[key] = answer[key];
    }
  }
  const message = isObject(answer) && typeof answer.message === 'string' ? answer.message.slice(0, 1000) : `the sync server answered ${status}`;
  if (!known) {
    const serverCode = isObject(answer) && typeof answer.code === 'string' ? answer.code.slice(0, 100) : null;
    return new RunStoreError(status === 503 ? 'UNAVAILABLE' : 'BACKEND', message, { ...fields, serverCode });
  }
  if (answer.code === 'SEQUENCE_CONFLICT') {
    if (!isCount(answer.expected) || !isCount(answer.actual) || typeof answer.eventsComplete !== 'boolean') {
      return malformed('a push', 'is a SEQUENCE_CONFLICT without its heads');
    }
    fields.events = checkEventList(answer.events, answer.expected, 'a push');
  }
  return new RunStoreError(answer.code, message, fields);
}

/**
 * One call of the server's API (`settings`: `url`, `namespace`, `token`, `fetch`, `signal`);
 * its error answers become RunStoreErrors with their fields. Also runstore/workflow's leases'.
 */
export async function request(settings, method, path, body) {
  const url = `${settings.url}/v1/namespaces/${encodeURIComponent(settings.namespace)}/${path}`;
  // Called unbound: the browser's fetch refuses any `this` but the global object.
  const { fetch } = settings;
  const requestId = body?.requestId ?? null;
  let response;
  try {
    response = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${settings.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: settings.signal,
    });
  } catch (error) {
    if (settings.signal?.aborted) throw settings.signal.reason;
    throw new RunStoreError('UNAVAILABLE', `the sync server at ${settings.url} could not be reached: ${error?.message ?? error}`, { requestId });
  }
  let answer;
  try {
    answer = await response.json();
  } catch (error) {
    if (settings.signal?.aborted) throw settings.signal.reason;
    const code = response.ok ? 'SERIALIZATION' : 'UNAVAILABLE';
    throw new RunStoreError(code, `the sync server answered ${response.status} without JSON`, { requestId, httpStatus: response.status });
  }
  if (response.ok) return answer;
  throw answerError(answer, response.status);
}

/**
 * The options, each read once. Anything wrong (a value of another type, a getter that throws)
 * is INVALID_INPUT naming `options.<field>`.
 */
export function readOptions(options) {
  const invalid = (field, reason) => new RunStoreError('INVALID_INPUT', `options.${field} ${reason}`, { field: `options.${field}` });
  if (!isObject(options)) throw new RunStoreError('INVALID_INPUT', 'options must be an object', { field: 'options' });
  const read = (field, fallback) => {
    let value;
    try {
      value = options[field];
    } catch (error) {
      throw invalid(field, `could not be read: ${error?.message ?? error}`);
    }
    return value === undefined ? fallback : value;
  };
  const url = read('url');
  const token = read('token');
  const namespace = read('namespace', 'default');
  const signal = read('signal', null);
  const live = read('live', false);
  const restorePurged = read('restorePurged', false);
  const onProgress = read('onProgress', () => {});
  const fetch = read('fetch', globalThis.fetch);
  const leases = read('leases', null);
  if (typeof url !== 'string') throw invalid('url', 'must be an absolute http(s) URL');
  let base;
  try {
    base = new URL(url);
  } catch {
    throw invalid('url', 'must be an absolute http(s) URL');
  }
  if (!['http:', 'https:'].includes(base.protocol)) throw invalid('url', 'must be an absolute http(s) URL');
  if (typeof token !== 'string' || token === '' || /[\r\n]/.test(token)) throw invalid('token', 'must be a non-empty string on one line');
  if (typeof namespace !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(namespace)) {
    throw invalid('namespace', "must be 1 to 64 ASCII letters, digits, '-', '_' or '.'");
  }
  if (typeof live !== 'boolean') throw invalid('live', 'must be a boolean');
  if (typeof restorePurged !== 'boolean') throw invalid('restorePurged', 'must be a boolean');
  if (typeof onProgress !== 'function') throw invalid('onProgress', 'must be a function');
  if (typeof fetch !== 'function') throw invalid('fetch', 'must be a function');
  if (leases !== null && typeof leases !== 'function') throw invalid('leases', 'must be a function');
  if (signal !== null && !(typeof AbortSignal === 'function' && signal instanceof AbortSignal)) throw invalid('signal', 'must be an AbortSignal');
  const report = (progress) => {
    // A throwing callback is the app's to fix; it must not stop the sync.
    try {
      onProgress(progress);
    } catch {
      // ignored
    }
  };
  const leaseOf = (workflowId) => (leases === null ? null : readLease(leases, workflowId, invalid));
  return { url: base.href.replace(/\/+$/, ''), token, namespace, signal, live, restorePurged, onProgress: report, fetch, leaseOf };
}

/** The lease `leases(workflowId)` says (or resolves to) a push of the workflow is made under: `{ holder, epoch }`, or null for none. */
async function readLease(leases, workflowId, invalid) {
  let lease;
  try {
    lease = await leases(workflowId);
  } catch (error) {
    throw invalid('leases', `threw for workflow ${workflowId}: ${error?.message ?? error}`);
  }
  if (lease === null || lease === undefined) return null;
  const { holder, epoch } = isObject(lease) ? lease : {};
  if (typeof holder !== 'string' || holder === '' || !Number.isSafeInteger(epoch) || epoch < 1) {
    throw invalid('leases', `must return null or { holder: a non-empty string, epoch: a positive integer } (for workflow ${workflowId})`);
  }
  return { holder, epoch };
}
