// Sync with a runstore sync server (src/server): push the journal appends the server has not
// got, pull the ones it has that this store lacks, per workflow, under the expected head.
//
// What this store and the server agree on is kept durably in the store itself, in one
// checkpoint per (server, namespace): a client id, the cursor into the namespace's change feed
// and, per workflow, the head both hold (`heads[id]`: events 1..heads[id] are the same on
// both). Pulled events are appended together with the new state in one step, so a crash
// between the two cannot happen. Pushes carry request ids derived from what they push, so a
// push re-sent after a lost answer, a crash or a server restart is answered from the server's
// request log instead of applied twice.
//
// A workflow written on both sides since they last agreed is never merged: its push is
// answered with SEQUENCE_CONFLICT, reported in the summary with both heads and the server's
// events, and left as it is on both sides.
import { RunStoreError, toRunStoreError } from './errors.js';

/** Most events one push carries. */
const PUSH_EVENTS = 500;
/** Page size of local reads and server pulls. */
const PAGE = 1000;
/** How long a live sync's pull waits on the server for a change. */
const LIVE_WAIT_MS = 25_000;
/** A live sync's pause after a failed pass, doubled up to the maximum while failures last. */
const RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
/** The longest a live sync goes between passes over every local workflow. */
const FULL_PASS_MS = 60_000;

/**
 * Runs one sync pass of `store` with the server, or with `live: true` keeps syncing until
 * `signal` aborts. Resolves to the (last) pass's summary.
 * @param {object} store a RunStore client or a RunStoreCore
 * @param {import('./index').SyncOptions} options
 */
export async function syncStore(store, options) {
  const settings = readOptions(options);
  if (!settings.live) return syncPass(store, settings);
  return syncLive(store, settings);
}

async function syncLive(store, settings) {
  const { signal } = settings;
  let summary = null;
  let pause = RETRY_MS;
  // A local append during a pass means another pass; during the wait, it ends the wait (and
  // the server's long-poll with it). That pass pushes only the workflows the change notices
  // named; the first pass, a pass after a failure, a notice naming no workflow (an import)
  // and at least one pass per FULL_PASS_MS go through every workflow, so that a notice lost
  // with a leader that went away delays a push but never loses it.
  let wait = null;
  let appended = false;
  let dirty = new Set();
  let fullPassDue = true;
  let lastFullPass = 0;
  const onAppend = (change) => {
    appended = true;
    if (change.workflowIds.length === 0) fullPassDue = true;
    for (const id of change.workflowIds) dirty.add(id);
    wait?.abort();
  };
  const unsubscribe = typeof store.subscribe === 'function' ? store.subscribe({ areas: ['journal'] }, onAppend) : () => {};
  const onAbort = () => wait?.abort();
  signal?.addEventListener('abort', onAbort);
  try {
    while (!signal?.aborted) {
      const full = fullPassDue || Date.now() - lastFullPass >= FULL_PASS_MS;
      const only = full ? null : dirty;
      try {
        appended = false;
        dirty = new Set();
        fullPassDue = false;
        summary = await syncPass(store, settings, only);
        if (full) lastFullPass = Date.now();
        settings.onProgress({ type: 'synced', summary });
        pause = RETRY_MS;
        if (appended) continue;
        wait = new AbortController();
        await waitForServer(settings, summary.cursor, wait.signal);
      } catch (error) {
        if (signal?.aborted) break;
        if (wait?.signal.aborted) continue;
        fullPassDue = true;
        settings.onProgress({ type: 'error', error: toRunStoreError(error) });
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
function waitForServer(settings, cursor, signal) {
  return request({ ...settings, signal }, 'GET', `changes?after=${cursor}&limit=1&waitMs=${LIVE_WAIT_MS}`);
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

/** One pass: push (every local workflow, or only those in the set `only`), then pull. */
async function syncPass(store, settings, only = null) {
  const state = await SyncState.load(store, settings);
  const summary = { pushed: { workflows: 0, events: 0 }, pulled: { workflows: 0, events: 0 }, conflicts: [], cursor: state.cursor };
  const conflicted = new Set();
  for await (const workflowId of only ?? localWorkflows(store)) {
    settings.signal?.throwIfAborted();
    const pushed = await pushWorkflow(store, settings, state, workflowId);
    if (pushed instanceof RunStoreError) {
      summary.conflicts.push(pushed);
      conflicted.add(workflowId);
      settings.onProgress({ type: 'conflict', workflowId, error: pushed });
    } else if (pushed > 0) {
      summary.pushed.workflows += 1;
      summary.pushed.events += pushed;
      settings.onProgress({ type: 'pushed', workflowId, events: pushed, head: state.head(workflowId) });
    }
  }
  for (;;) {
    settings.signal?.throwIfAborted();
    const page = await request(settings, 'GET', `changes?after=${state.cursor}&limit=${PAGE}`);
    for (const { workflowId, head } of page.changes) {
      if (conflicted.has(workflowId) || head <= state.head(workflowId)) continue;
      const pulled = await pullWorkflow(store, settings, state, workflowId);
      if (pulled > 0) {
        summary.pulled.workflows += 1;
        summary.pulled.events += pulled;
        settings.onProgress({ type: 'pulled', workflowId, events: pulled, head: state.head(workflowId) });
      }
    }
    // A workflow skipped here (written locally meanwhile) is pushed by the next pass, and its
    // push reports the server's events if the two went apart.
    await state.save(store, { cursor: page.cursor });
    if (!page.more) break;
  }
  summary.cursor = state.cursor;
  return summary;
}

/** Every workflow id of the local store, page by page. */
async function* localWorkflows(store) {
  let cursor = null;
  do {
    const page = await store.listWorkflowIds({ limit: PAGE, cursor });
    yield* page.items;
    cursor = page.nextCursor;
  } while (cursor);
}

/**
 * Pushes the workflow's local events after the agreed head. Resolves to the number of events
 * pushed, or to the SEQUENCE_CONFLICT when the server's head moved too.
 */
async function pushWorkflow(store, settings, state, workflowId) {
  let pushed = 0;
  for (;;) {
    const base = state.head(workflowId);
    const local = await store.readHistoryFrom(workflowId, base + 1, { limit: PUSH_EVENTS });
    if (local.items.length === 0) return pushed;
    const events = local.items.map(withoutSeq);
    const requestId = await pushRequestId(state.clientId, workflowId, base, events);
    try {
      const answer = await request(settings, 'POST', 'push', { requestId, workflowId, expectedHead: base, events });
      await state.save(store, { heads: { [workflowId]: answer.head } });
      pushed += events.length;
    } catch (error) {
      if (error.code !== 'SEQUENCE_CONFLICT') throw error;
      // The server may hold these very events already (a push whose answer was lost before
      // its request id was known, or events pulled from it before): then they agree further.
      const same = commonLength(events, error.events.map(withoutSeq));
      const agreed = base + same;
      if (same > 0 && (same === events.length || same === error.events.length)) {
        await state.save(store, { heads: { [workflowId]: agreed } });
        continue;
      }
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
  }
}

/**
 * Appends the server's events after the agreed head, each page with the new agreed head in
 * one step. Resolves to the number of events pulled (0 when the workflow moved here meanwhile).
 */
async function pullWorkflow(store, settings, state, workflowId) {
  let pulled = 0;
  for (;;) {
    const base = state.head(workflowId);
    const page = await request(settings, 'GET', `workflows/${encodeURIComponent(workflowId)}/events?after=${base}&limit=${PAGE}`);
    if (page.events.length === 0) return pulled;
    const events = page.events.map(withoutSeq);
    try {
      await state.save(store, { heads: { [workflowId]: base + events.length } }, [
        { op: 'append', workflowId, events, expectedSeq: base },
      ]);
    } catch (error) {
      if (error.code === 'SEQUENCE_CONFLICT' && error.operation === 0) return pulled;
      throw error;
    }
    pulled += events.length;
  }
}

/** The sync state of one (server, namespace), kept in a checkpoint of the store. */
class SyncState {
  constructor(checkpointId, revision, state) {
    this.checkpointId = checkpointId;
    this.revision = revision;
    this.clientId = state.clientId;
    this.cursor = state.cursor;
    this.heads = state.heads;
  }

  static async load(store, settings) {
    const checkpointId = `runstore.sync:${settings.namespace}@${settings.url}`;
    try {
      const checkpoint = await store.loadCheckpoint(checkpointId);
      return new SyncState(checkpointId, checkpoint.revision, checkpoint.state);
    } catch (error) {
      if (error.code !== 'NOT_FOUND') throw error;
      return new SyncState(checkpointId, null, { clientId: randomId(), cursor: 0, heads: {} });
    }
  }

  head(workflowId) {
    return Object.hasOwn(this.heads, workflowId) ? this.heads[workflowId] : 0;
  }

  /**
   * Stores the state with `changes` applied, in one step with `operations` (none, or a pulled
   * append). Another sync of the same server and namespace that saved first makes this one
   * fail with CONFLICT, and nothing of the step is written.
   */
  async save(store, changes, operations = []) {
    const state = {
      clientId: this.clientId,
      cursor: changes.cursor ?? this.cursor,
      heads: { ...this.heads, ...changes.heads },
    };
    const revision = this.revision === null ? 0 : this.revision + 1;
    const checkpoint = { checkpointId: this.checkpointId, revision, state, updatedAt: Date.now() };
    await store.commit({
      operations: [...operations, { op: 'compareAndSwapCheckpoint', checkpoint, expectedRevision: this.revision }],
    });
    this.revision = revision;
    this.cursor = state.cursor;
    this.heads = state.heads;
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

/** One call of the server's API; its error answers become RunStoreErrors with their fields. */
async function request(settings, method, path, body) {
  const url = `${settings.url}/v1/namespaces/${encodeURIComponent(settings.namespace)}/${path}`;
  // Called unbound: the browser's fetch refuses any `this` but the global object.
  const { fetch } = settings;
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
    throw new RunStoreError('UNAVAILABLE', `the sync server at ${settings.url} could not be reached: ${error?.message ?? error}`, { requestId: body?.requestId ?? null });
  }
  let answer;
  try {
    answer = await response.json();
  } catch {
    throw new RunStoreError(response.ok ? 'SERIALIZATION' : 'UNAVAILABLE', `the sync server answered ${response.status} without JSON`, { requestId: body?.requestId ?? null });
  }
  if (response.ok) return answer;
  const { code, message, ...fields } = answer ?? {};
  throw new RunStoreError(typeof code === 'string' ? code : 'BACKEND', String(message ?? `the sync server answered ${response.status}`), { ...fields, httpStatus: response.status });
}

function readOptions(options) {
  const invalid = (field, reason) => new RunStoreError('INVALID_INPUT', `${field} ${reason}`, { field: `options.${field}` });
  if (!options || typeof options !== 'object') throw invalid('options', 'must be an object');
  const { url, token, namespace = 'default', signal = null, live = false, onProgress = () => {}, fetch = globalThis.fetch } = options;
  let base;
  try {
    base = new URL(url);
  } catch {
    throw invalid('url', 'must be an absolute http(s) URL');
  }
  if (!['http:', 'https:'].includes(base.protocol)) throw invalid('url', 'must be an absolute http(s) URL');
  if (typeof token !== 'string' || token === '') throw invalid('token', 'must be a non-empty string');
  if (typeof namespace !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(namespace)) {
    throw invalid('namespace', "must be 1 to 64 ASCII letters, digits, '-', '_' or '.'");
  }
  if (typeof live !== 'boolean') throw invalid('live', 'must be a boolean');
  if (typeof onProgress !== 'function') throw invalid('onProgress', 'must be a function');
  if (typeof fetch !== 'function') throw invalid('fetch', 'must be a function');
  if (signal !== null && !(signal instanceof AbortSignal)) throw invalid('signal', 'must be an AbortSignal');
  return { url: base.href.replace(/\/+$/, ''), token, namespace, signal, live, onProgress, fetch };
}
