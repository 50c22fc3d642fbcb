// runstore/langgraph: a LangGraph.js checkpoint saver on a runstore store, and a ledger helper
// that runs a tool call once per idempotency key. It works on a `RunStore` (the main-thread
// client) and on a `RunStoreCore` (runstore/core, whose methods are synchronous: awaiting them
// is the same), through the store's public methods only.
//
// Layout, all in the store's checkpoints area (ids and run ids under `prefix`, default
// `langgraph`; `K(...)` below is `prefix:kind:` + the JSON of the parts):
// - a thread record per thread, K('thread', [thread]), in the run `prefix:threads`: the
//   thread's generation and the latest checkpoint id of each namespace;
// - a record per checkpoint, K('checkpoint', [thread, generation, newestFirst(id), ns]), in the
//   run K('checkpoints', [thread, generation]): the checkpoint without its channel values, its
//   metadata, its parent's id, the small values (up to INLINE_BYTES) of the channels its put
//   named in `newVersions` (`inline`), and for the other channels whose value at their version
//   a checkpoint's record keeps, that checkpoint's id (`homes`, found through the parent's
//   record). The run lists its records by id, so `newestFirst` (an encoding of the checkpoint
//   id that sorts in reverse) lets `list` read the newest first, a page at a time;
// - a record per larger channel value, K('blob', [thread, generation, ns, channel, version]),
//   in the run K('blobs', [thread, generation]): stored once per version, when a put names its
//   channel in `newVersions`, and read back for every checkpoint at that version;
// - a record per checkpoint and task for pending writes, K('writes', [thread, generation, ns,
//   id, task]), in the run K('pending', [thread, generation, ns, id]).
// A put is one step (the checkpoint, its new channel values and the thread record move
// together), a putWrites one step, and deleteThread starts with one step that moves the thread
// to a new generation, so a crash never leaves half a checkpoint or half a deletion visible.
import {
  BaseCheckpointSaver,
  JsonPlusSerializer,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  copyCheckpoint,
  maxChannelVersion,
  writesSortKey,
} from '@langchain/langgraph-checkpoint';
import { RunStoreError } from './errors.js';

/** Most operations one sweep step of deleteThread holds (a step may hold 1000). */
const SWEEP_BATCH = 500;
/** The first page `list` reads of a thread without a limit, and the largest it reads. */
const LIST_PAGE = 100;
const MAX_LIST_PAGE = 1000;
/**
 * The largest serialized channel value a checkpoint's record keeps itself (a value the put
 * names in newVersions); a larger one gets a record of its own per version. A record of its
 * own costs an operation to write, a read, and a few hundred bytes of ids and index.
 */
const INLINE_BYTES = 256;
/** Most checkpoints whose kept values a saver remembers (it then forgets them all). */
const MAX_RECENT = 1000;
/** Most rounds a write makes after conflicts with other writers before it gives up. */
const MAX_ATTEMPTS = 64;
/** Thrown out of a put's step when the thread is in another generation than its parent was read in. */
const STALE_PARENT = Symbol('stale parent');

export class RunStoreSaver extends BaseCheckpointSaver {
  #store;
  #prefix;
  /** Thread id -> { revision, state } of its thread record as this saver last wrote or read it. */
  #threads = new Map();
  /** Checkpoint record id -> where the values of the checkpoints this saver last put are kept. */
  #recent = new Map();

  /**
   * @param {object} store a RunStore or a RunStoreCore
   * @param {{ prefix?: string, serde?: object }} [options]
   */
  constructor(store, options = {}) {
    super(options.serde);
    if (!store || typeof store.commit !== 'function' || typeof store.loadCheckpoint !== 'function') {
      throw new RunStoreError('INVALID_INPUT', 'RunStoreSaver needs a RunStore or a RunStoreCore', { field: 'store' });
    }
    const prefix = options.prefix ?? 'langgraph';
    if (typeof prefix !== 'string' || prefix === '' || prefix.includes(':')) {
      throw new RunStoreError('INVALID_INPUT', 'prefix must be a non-empty string without ":"', { field: 'options.prefix' });
    }
    this.#store = store;
    this.#prefix = prefix;
  }

  /** The store this saver writes to. */
  get store() {
    return this.#store;
  }

  #key(kind, parts) {
    return `${this.#prefix}:${kind}:${JSON.stringify(parts)}`;
  }

  /** A checkpoint's record id: its run lists it among the thread's checkpoints newest first. */
  #checkpointKey(threadId, generation, ns, checkpointId) {
    return this.#key('checkpoint', [threadId, generation, newestFirst(checkpointId), ns]);
  }

  get #threadsRun() {
    return `${this.#prefix}:threads`;
  }

  // ----- reads -----

  async getTuple(config) {
    const threadId = optionalThreadId(config);
    if (threadId === undefined) return undefined;
    const ns = namespaceOf(config);
    const asked = config.configurable?.checkpoint_id;
    // The checkpoint as this saver last saw the thread (its generation, and for the latest its
    // id) is read beside the thread record: one message to a RunStore's worker when it holds.
    const seen = this.#threads.get(threadId)?.state;
    const guess = seen === undefined ? undefined : (asked ?? seen.latest[ns]);
    const [thread, guessed] = await Promise.all([
      this.#loadThread(threadId),
      guess === undefined ? null : this.#load(this.#checkpointKey(threadId, seen.generation, ns, String(guess))),
    ]);
    if (!thread) return undefined;
    const checkpointId = asked ?? thread.state.latest[ns];
    if (checkpointId === undefined) return undefined;
    const { generation } = thread.state;
    const record =
      guess !== undefined && seen.generation === generation && String(guess) === String(checkpointId)
        ? guessed
        : await this.#load(this.#checkpointKey(threadId, generation, ns, String(checkpointId)));
    if (!record || record.state === null) return undefined;
    return this.#tuple(threadId, generation, record.state);
  }

  async *list(config, options = {}) {
    const { before, filter } = options;
    let { limit } = options;
    const threadId = optionalThreadId(config);
    const ns = config?.configurable?.checkpoint_ns;
    const only = config?.configurable?.checkpoint_id;
    const beforeId = before?.configurable?.checkpoint_id;
    const threads = threadId === undefined ? this.#allThreads() : this.#oneThread(threadId);
    for await (const state of threads) {
      const thread = state.threadId;
      // The run lists a thread's checkpoints newest first (see newestFirst): pages of what is
      // still wanted, larger as filters pass over records.
      let size = Math.min(Math.max(limit ?? LIST_PAGE, 1), MAX_LIST_PAGE);
      let cursor = null;
      do {
        const page = await this.#store.listRunCheckpoints(this.#key('checkpoints', [thread, state.generation]), { cursor, limit: size });
        for (const record of page.items) {
          const entry = record.state;
          if (entry === null) continue;
          if (ns !== undefined && entry.ns !== ns) continue;
          if (only !== undefined && entry.checkpointId !== only) continue;
          if (beforeId !== undefined && !(entry.checkpointId < beforeId)) continue;
          if (limit !== undefined && limit <= 0) return;
          if (filter && !matches(await this.#decode(entry.metadata), filter)) continue;
          if (limit !== undefined) limit -= 1;
          yield await this.#tuple(thread, state.generation, entry);
        }
        if (limit !== undefined && limit <= 0) return;
        cursor = page.nextCursor;
        size = Math.min(size * 4, MAX_LIST_PAGE);
      } while (cursor);
    }
  }

  /** The tuple of a stored checkpoint entry: values from their versions, writes in order. */
  async #tuple(threadId, generation, entry) {
    const { ns, checkpointId, parentId } = entry;
    const checkpoint = await this.#decode(entry.checkpoint);
    // The writes and the channel values are read together (one message to a RunStore's worker).
    const [metadata, pendingWrites, channelValues] = await Promise.all([
      this.#decode(entry.metadata),
      this.#pendingWrites(threadId, generation, ns, checkpointId),
      this.#channelValues(threadId, generation, ns, checkpoint.channel_versions ?? {}, entry),
    ]);
    checkpoint.channel_values = channelValues;
    if (checkpoint.v < 4 && parentId !== null) {
      await this.#migratePendingSends(checkpoint, threadId, generation, ns, parentId);
    }
    const tuple = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } },
      checkpoint,
      metadata,
      pendingWrites: pendingWrites.map(([taskId, channel, value]) => [taskId, channel, value]),
    };
    if (parentId !== null) {
      tuple.parentConfig = { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: parentId } };
    }
    return tuple;
  }

  /**
   * Each channel's value at its version: from the checkpoint's record, from the record of the
   * checkpoint its `homes` names, or from the value's own record; the reads go together.
   */
  async #channelValues(threadId, generation, ns, versions, entry) {
    const channels = Object.keys(versions);
    const homes = new Map();
    const homeRecord = (id) => {
      if (!homes.has(id)) homes.set(id, this.#load(this.#checkpointKey(threadId, generation, ns, id)));
      return homes.get(id);
    };
    const blob = async (channel, version) => (await this.#load(this.#key('blob', [threadId, generation, ns, channel, version])))?.state ?? null;
    const stored = await Promise.all(
      channels.map(async (channel) => {
        const version = String(versions[channel]);
        const own = entry.inline?.[channel];
        if (own && own[0] === version) return own[1];
        const home = entry.homes?.[channel];
        if (home && home[0] === version) {
          const kept = (await homeRecord(home[1]))?.state?.inline?.[channel];
          if (kept && kept[0] === version) return kept[1];
        }
        return blob(channel, version);
      }),
    );
    const values = {};
    for (let i = 0; i < channels.length; i += 1) {
      if (stored[i] !== null && stored[i].t !== 'empty') values[channels[i]] = await this.#decode(stored[i]);
    }
    return values;
  }

  /**
   * Where a checkpoint's values are kept (`places`, null when it has no record), from this
   * saver's memory or its record, under the thread's `generation` as this saver knows it.
   */
  async #placesOf(threadId, ns, checkpointId) {
    const thread = await this.#cachedThread(threadId);
    const generation = thread?.state.generation ?? 0;
    const id = this.#checkpointKey(threadId, generation, ns, checkpointId);
    let places = this.#recent.get(id);
    if (places === undefined) {
      const record = thread ? await this.#load(id) : null;
      places = record?.state ? this.#remember(id, record.state) : null;
    }
    return { generation, places };
  }

  /** Remembers where the values of the checkpoint `entry` (record `id`) are kept. */
  #remember(id, entry) {
    const { checkpointId } = entry;
    const inline = entry.inline ?? {};
    const homes = entry.homes ?? {};
    const places = {
      homeOf(channel, version) {
        if (inline[channel]?.[0] === version) return checkpointId;
        if (homes[channel]?.[0] === version) return homes[channel][1];
        return null;
      },
    };
    if (this.#recent.size >= MAX_RECENT) this.#recent.clear();
    this.#recent.set(id, places);
    return places;
  }

  /** A checkpoint's writes as [taskId, channel, value], in LangGraph's (task path, task id, index) order. */
  async #pendingWrites(threadId, generation, ns, checkpointId) {
    const rows = [];
    for await (const record of this.#pages(this.#key('pending', [threadId, generation, ns, checkpointId]))) {
      if (record.state === null) continue;
      const { taskId, taskPath, writes } = record.state;
      for (const write of writes) rows.push({ key: writesSortKey(taskPath, taskId, write.idx), taskId, write });
    }
    rows.sort((a, b) => compareWritesSortKeys(a.key, b.key));
    return Promise.all(rows.map(async ({ taskId, write }) => [taskId, write.channel, await this.#decode(write.value)]));
  }

  /** Checkpoints older than format 4 kept pending sends in their parent's writes (as LangGraph's own savers migrate them). */
  async #migratePendingSends(checkpoint, threadId, generation, ns, parentId) {
    const parentWrites = await this.#pendingWrites(threadId, generation, ns, parentId);
    checkpoint.channel_values[TASKS] = parentWrites.filter(([, channel]) => channel === TASKS).map(([, , value]) => value);
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }

  // ----- writes -----

  async put(config, checkpoint, metadata, newVersions) {
    const threadId = requiredThreadId(config, 'put');
    const ns = namespaceOf(config);
    const checkpointId = checkpoint?.id;
    if (typeof checkpointId !== 'string' || checkpointId === '') {
      throw new RunStoreError('INVALID_INPUT', 'the checkpoint has no id', { field: 'checkpoint.id' });
    }
    const { channel_values: channelValues = {}, ...rest } = copyCheckpoint(checkpoint);
    const parentId = config.configurable.checkpoint_id ?? null;
    const versions = rest.channel_versions ?? {};
    const changed = newVersions ?? {};
    const [storedCheckpoint, storedMetadata] = await Promise.all([this.#encode(rest), this.#encode(metadata)]);
    // A value the put names is kept in the checkpoint's record when small (`inline`), else in
    // a record of its own per version (a blob). Of the others, `homes` names the checkpoint
    // whose record keeps the value at its version, as the parent's record says.
    const inline = {};
    const blobs = [];
    await Promise.all(
      Object.entries(changed).map(async ([channel, version]) => {
        version = String(version);
        const [value, size] = channel in channelValues ? await this.#encodeSized(channelValues[channel]) : [{ t: 'empty' }, 0];
        if (size <= INLINE_BYTES && Object.hasOwn(versions, channel) && String(versions[channel]) === version) {
          inline[channel] = [version, value];
        } else {
          blobs.push({ channel, version, value });
        }
      }),
    );
    const entry = {
      threadId,
      ns,
      checkpointId,
      parentId,
      checkpoint: storedCheckpoint,
      metadata: storedMetadata,
      inline: orderedLike(versions, inline),
      homes: {},
    };
    const present = new Set();
    let replaceRevision = null;
    let state;
    for (let attempt = 1; ; attempt += 1) {
      // The parent's record as of the thread's generation this saver knows; if the thread
      // moved to another one meanwhile (deleteThread elsewhere), read it again there.
      const parent = parentId === null ? null : await this.#placesOf(threadId, ns, String(parentId));
      const homes = {};
      for (const [channel, version] of Object.entries(versions)) {
        const home = parent?.places && !Object.hasOwn(changed, channel) ? parent.places.homeOf(channel, String(version)) : null;
        if (home !== null) homes[channel] = [String(version), home];
      }
      entry.homes = homes;
      try {
        state = await this.#writeThread(threadId, (state, now) => {
          const { generation } = state;
          if (parent !== null && parent.generation !== generation) throw STALE_PARENT;
          const operations = [
            this.#create(this.#checkpointKey(threadId, generation, ns, checkpointId), this.#key('checkpoints', [threadId, generation]), entry, now, replaceRevision),
          ];
          for (const blob of blobs) {
            const id = this.#key('blob', [threadId, generation, ns, blob.channel, blob.version]);
            // A version names one value: a blob stored before at this version is kept.
            if (!present.has(id)) operations.push(this.#create(id, this.#key('blobs', [threadId, generation]), blob.value, now, null));
          }
          const latest = state.latest[ns];
          const next = latest === undefined || latest < checkpointId ? { ...state, latest: { ...state.latest, [ns]: checkpointId } } : state;
          return { operations, next };
        }, (error, operation) => {
          if (operation === 0) {
            // The checkpoint was stored before under this id: a put replaces it.
            replaceRevision = error.actual;
          } else {
            present.add(error.id);
          }
        });
        break;
      } catch (error) {
        if (error !== STALE_PARENT) throw error;
        if (attempt >= MAX_ATTEMPTS) throw tooManyConflicts(this.#key('thread', [threadId]));
      }
    }
    this.#remember(this.#checkpointKey(threadId, state.generation, ns, checkpointId), entry);
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } };
  }

  async putWrites(config, writes, taskId, taskPath = '') {
    const threadId = requiredThreadId(config, 'putWrites');
    const ns = namespaceOf(config);
    const checkpointId = config.configurable.checkpoint_id;
    if (checkpointId === undefined || checkpointId === null || checkpointId === '') {
      throw new RunStoreError('INVALID_INPUT', 'putWrites needs config.configurable.checkpoint_id', { field: 'config.configurable.checkpoint_id' });
    }
    if (typeof taskId !== 'string' || taskId === '') {
      throw new RunStoreError('INVALID_INPUT', 'taskId must be a non-empty string', { field: 'taskId' });
    }
    const incoming = await Promise.all(
      writes.map(async ([channel, value], idx) => ({ idx: WRITES_IDX_MAP[channel] ?? idx, channel, value: await this.#encode(value) })),
    );
    const thread = (await this.#cachedThread(threadId)) ?? { state: newThreadState(threadId) };
    const { generation } = thread.state;
    const id = this.#key('writes', [threadId, generation, ns, String(checkpointId), taskId]);
    const run = this.#key('pending', [threadId, generation, ns, String(checkpointId)]);
    let stored = null;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const state = { taskId, taskPath, writes: mergeWrites(stored?.state?.writes ?? [], incoming) };
      try {
        await this.#store.commit({ operations: [this.#create(id, run, state, Date.now(), stored?.revision ?? null)] });
        return;
      } catch (error) {
        if (error?.code !== 'CONFLICT') throw error;
        stored = await this.#load(id);
      }
    }
    throw tooManyConflicts(id);
  }

  async deleteThread(threadId) {
    threadId = threadIdOf(threadId, 'threadId');
    // One step moves the thread to a new generation: from then on nothing of the old one is
    // visible. Then each old generation's records are emptied, in steps of SWEEP_BATCH.
    const state = await this.#writeThread(threadId, (current) => ({
      operations: [],
      next: {
        ...current,
        generation: current.generation + 1,
        latest: {},
        sweep: [...current.sweep, current.generation],
      },
    }));
    for (const generation of state.sweep) await this.#sweep(threadId, generation);
    await this.#writeThread(threadId, (current) => ({
      operations: [],
      next: { ...current, sweep: current.sweep.filter((g) => !state.sweep.includes(g)) },
    }));
  }

  /**
   * Empties every record of one old generation of a thread: its state becomes null and it
   * leaves its run (the store's checkpoints area keeps a record's id once written), so what
   * the thread held is gone. Safe to run again after a crash: emptied records are in no run.
   */
  async #sweep(threadId, generation) {
    const runs = [this.#key('checkpoints', [threadId, generation]), this.#key('blobs', [threadId, generation])];
    for (const entry of await this.#all(runs[0])) {
      if (entry.state !== null) runs.push(this.#key('pending', [threadId, generation, entry.state.ns, entry.state.checkpointId]));
    }
    // The checkpoints' run last: a crash before it leaves the runs of their writes findable.
    runs.push(runs.shift());
    for (const run of runs) {
      for (;;) {
        const page = await this.#store.listRunCheckpoints(run, { limit: SWEEP_BATCH });
        if (page.items.length === 0) break;
        const now = Date.now();
        const operations = page.items.map((record) => ({
          op: 'compareAndSwapCheckpoint',
          checkpoint: { checkpointId: record.checkpointId, runId: null, revision: record.revision + 1, state: null, updatedAt: now },
          expectedRevision: record.revision,
        }));
        try {
          await this.#store.commit({ operations });
        } catch (error) {
          // Another writer changed one of them: list again and empty what is there now.
          if (error?.code !== 'CONFLICT') throw error;
        }
      }
    }
  }

  // ----- the thread record -----

  /**
   * Commits `build(state, now)`'s operations together with the thread record's new state, one
   * step. On a conflict from another writer it reads the thread record again (operation 0 of
   * the step is the thread record) or lets `onConflict(error, index)` adjust the other
   * operations, and tries again. Resolves to the thread record's new state.
   */
  async #writeThread(threadId, build, onConflict = () => {}) {
    let thread = await this.#cachedThread(threadId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const state = thread?.state ?? newThreadState(threadId);
      const now = Date.now();
      const { operations, next } = build(state, now);
      const threadOperation = this.#create(this.#key('thread', [threadId]), this.#threadsRun, next, now, thread?.revision ?? null);
      try {
        await this.#store.commit({ operations: [threadOperation, ...operations] });
        this.#threads.set(threadId, { revision: thread ? thread.revision + 1 : 0, state: next });
        return next;
      } catch (error) {
        if (error?.code !== 'CONFLICT' || typeof error.operation !== 'number') throw error;
        if (error.operation === 0) {
          thread = await this.#loadThread(threadId);
        } else {
          onConflict(error, error.operation - 1);
        }
      }
    }
    throw tooManyConflicts(this.#key('thread', [threadId]));
  }

  async #cachedThread(threadId) {
    return this.#threads.get(threadId) ?? this.#loadThread(threadId);
  }

  /** The thread record as stored now (and cached), or null. */
  async #loadThread(threadId) {
    const record = await this.#load(this.#key('thread', [threadId]));
    if (!record) {
      this.#threads.delete(threadId);
      return null;
    }
    const thread = { revision: record.revision, state: record.state };
    this.#threads.set(threadId, thread);
    return thread;
  }

  async *#oneThread(threadId) {
    const thread = await this.#loadThread(threadId);
    if (thread) yield thread.state;
  }

  async *#allThreads() {
    for await (const record of this.#pages(this.#threadsRun)) yield record.state;
  }

  // ----- store helpers -----

  /** The compare-and-swap operation that writes record `id` (a create when `revision` is null). */
  #create(id, runId, state, now, revision) {
    return {
      op: 'compareAndSwapCheckpoint',
      checkpoint: { checkpointId: id, runId, revision: revision === null ? 0 : revision + 1, state, updatedAt: now },
      expectedRevision: revision,
    };
  }

  async #load(id) {
    try {
      return await this.#store.loadCheckpoint(id);
    } catch (error) {
      if (error?.code === 'NOT_FOUND') return null;
      throw error;
    }
  }

  async *#pages(runId) {
    let cursor = null;
    do {
      // The first page names no page argument: getTuple and list read a first page every
      // time, and the store then converts no `{ cursor: null }` for it.
      const page = await this.#store.listRunCheckpoints(runId, cursor === null ? undefined : { cursor });
      yield* page.items;
      cursor = page.nextCursor;
    } while (cursor);
  }

  async #all(runId) {
    const items = [];
    for await (const item of this.#pages(runId)) items.push(item);
    return items;
  }

  /**
   * A value as the store keeps it: the serializer's JSON as a JSON value (readable in any
   * inspector of the store), any other serialization as base64 text.
   */
  async #encode(value) {
    return (await this.#encodeSized(value))[0];
  }

  /** The stored value and the size of its serialization, in bytes. */
  async #encodeSized(value) {
    const [type, bytes] = await this.serde.dumpsTyped(value);
    if (type === 'json') return [{ t: 'json', v: JSON.parse(new TextDecoder().decode(bytes)) }, bytes.length];
    return [{ t: type, b64: toBase64(bytes) }, bytes.length];
  }

  /**
   * The value of a stored one (a promise or the value). LangGraph's own serializer, reading
   * JSON, changes only objects with an `lc` field (its records of undefined, a Set, a Map, an
   * Error, a delta snapshot, a LangChain object) and copies anything else as it is: a value
   * without one is given as the store answered it, a copy of its own, without a second JSON
   * text and walk.
   */
  #decode(stored) {
    if (stored.t === 'json') {
      if (Object.getPrototypeOf(this.serde) === JsonPlusSerializer.prototype && !hasRecord(stored.v)) return stored.v;
      return this.serde.loadsTyped('json', JSON.stringify(stored.v));
    }
    return this.serde.loadsTyped(stored.t, fromBase64(stored.b64));
  }
}

/**
 * Runs `perform(request)` at most once per (capabilityId, idempotencyKey), recorded in the
 * store's effect ledger: `started` before the call, then `completed` with its output (or
 * `failed` with its message). A call found completed returns its recorded output without
 * running again (a graph resumed from its checkpoint re-runs its tool node); one found failed
 * runs again. One found `started` or `outcomeUnknown` was cut off (a reload, a crash) after it
 * may have reached the outside world: it is marked `outcomeUnknown`, and `onOutcomeUnknown`
 * decides (its result becomes the output); without it the call rejects with CONFLICT.
 *
 * @template T
 * @param {object} store a RunStore or a RunStoreCore
 * @param {{ capabilityId: string, idempotencyKey: string, request?: unknown,
 *   onOutcomeUnknown?: (record: object) => T | Promise<T> }} call
 * @param {(request: unknown) => T | Promise<T>} perform
 * @returns {Promise<T>}
 */
export async function runEffectOnce(store, call, perform) {
  const { capabilityId, idempotencyKey, request = null, onOutcomeUnknown } = call ?? {};
  if (typeof perform !== 'function') {
    throw new RunStoreError('INVALID_INPUT', 'perform must be a function', { field: 'perform' });
  }
  const found = await store.findEffect(capabilityId, idempotencyKey);
  const effectId = found?.effectId ?? `${capabilityId}/${idempotencyKey}`;
  const record = (revision, status) => ({ effectId, capabilityId, idempotencyKey, revision, request, status, updatedAt: Date.now() });
  let revision;
  if (!found) {
    revision = 0;
    await store.compareAndSwapEffect(record(revision, { type: 'started' }), null);
  } else if (found.status.type === 'completed') {
    return found.status.output;
  } else if (found.status.type === 'failed' || found.status.type === 'prepared') {
    revision = found.revision + 1;
    await store.compareAndSwapEffect(record(revision, { type: 'started' }), found.revision);
  } else {
    return settleUnknown(store, found, onOutcomeUnknown);
  }
  let output;
  try {
    output = await perform(request);
  } catch (error) {
    await store.compareAndSwapEffect(record(revision + 1, { type: 'failed', error: String(error?.message ?? error) }), revision);
    throw error;
  }
  await store.compareAndSwapEffect(record(revision + 1, { type: 'completed', output: output ?? null }), revision);
  return output;
}

async function settleUnknown(store, found, onOutcomeUnknown) {
  let current = found;
  if (found.status.type === 'started') {
    current = { ...found, revision: found.revision + 1, status: { type: 'outcomeUnknown' }, updatedAt: Date.now() };
    await store.compareAndSwapEffect(current, found.revision);
  }
  if (typeof onOutcomeUnknown !== 'function') {
    throw new RunStoreError('CONFLICT', `the effect ${found.effectId} was cut off after it started: its outcome is unknown`, {
      entity: 'effect',
      id: found.effectId,
      status: 'outcomeUnknown',
    });
  }
  const output = await onOutcomeUnknown(current);
  await store.compareAndSwapEffect(
    { ...current, revision: current.revision + 1, status: { type: 'completed', output: output ?? null }, updatedAt: Date.now() },
    current.revision,
  );
  return output;
}

// ----- helpers -----

/**
 * A text whose order (byte by byte, as the store orders ids) is the reverse of `id`'s order
 * (by UTF-16 code unit, as JS compares strings), so a run lists its checkpoints newest first. Each code unit becomes one character of ALPHABET ('-' to 'z', what checkpoint ids
 * are made of), or a prefix and hex digits (others), in reverse; a last character greater
 * than any of them puts a longer id before its prefix. No character of it needs escaping in
 * JSON, so the record ids keep this order.
 */
function newestFirst(id) {
  let text = '';
  for (let i = 0; i < id.length; i += 1) {
    const unit = id.charCodeAt(i);
    if (unit > 0x7a) text += ALPHABET[0] + (0xffff - unit).toString(16).padStart(4, '0');
    else if (unit >= 0x2d) text += ALPHABET[1 + 0x7a - unit];
    else text += ALPHABET[80] + (0xff - unit).toString(16).padStart(2, '0');
  }
  return text + ALPHABET[81];
}

/** '#' to '~' without the backslash, ascending: characters JSON keeps as they are. */
const ALPHABET = Array.from({ length: 0x7f - 0x23 }, (_, i) => String.fromCharCode(0x23 + i)).filter((c) => c !== '\\').join('');

/** `map`'s entries in the order of `like`'s keys (the channels' order in the checkpoint). */
function orderedLike(like, map) {
  const ordered = {};
  for (const key of Object.keys(like)) if (Object.hasOwn(map, key)) ordered[key] = map[key];
  for (const key of Object.keys(map)) if (!Object.hasOwn(ordered, key)) ordered[key] = map[key];
  return ordered;
}

/** Whether a JSON value holds an object with an `lc` field (what LangGraph's serializer revives). */
function hasRecord(value) {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) if (hasRecord(value[i])) return true;
    return false;
  }
  if (Object.hasOwn(value, 'lc')) return true;
  for (const key in value) if (hasRecord(value[key])) return true;
  return false;
}

function newThreadState(threadId) {
  return { threadId, generation: 0, latest: {}, sweep: [] };
}

/** Stored writes merged with new ones: a regular write (index >= 0) is kept once stored, a special one (errors, interrupts) replaced. */
function mergeWrites(stored, incoming) {
  const byIdx = new Map(stored.map((write) => [write.idx, write]));
  for (const write of incoming) {
    if (write.idx >= 0 && byIdx.has(write.idx)) continue;
    byIdx.set(write.idx, write);
  }
  return [...byIdx.values()];
}

function threadIdOf(value, field) {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string' || value === '') {
    throw new RunStoreError('INVALID_INPUT', `${field} must be a non-empty string`, { field });
  }
  return value;
}

function optionalThreadId(config) {
  const threadId = config?.configurable?.thread_id;
  return threadId === undefined || threadId === null ? undefined : threadIdOf(threadId, 'config.configurable.thread_id');
}

function requiredThreadId(config, method) {
  if (!config?.configurable || typeof config.configurable !== 'object') {
    throw new RunStoreError('INVALID_INPUT', `${method} needs config.configurable with a thread_id`, { field: 'config.configurable' });
  }
  const threadId = config.configurable.thread_id;
  if (threadId === undefined || threadId === null) {
    throw new RunStoreError(
      'INVALID_INPUT',
      `${method} needs config.configurable.thread_id: pass one, for example graph.invoke(input, { configurable: { thread_id: "my-thread" } })`,
      { field: 'config.configurable.thread_id' },
    );
  }
  return threadIdOf(threadId, 'config.configurable.thread_id');
}

function namespaceOf(config) {
  const ns = config?.configurable?.checkpoint_ns ?? '';
  if (typeof ns !== 'string') {
    throw new RunStoreError('INVALID_INPUT', 'checkpoint_ns must be a string', { field: 'config.configurable.checkpoint_ns' });
  }
  return ns;
}

function matches(metadata, filter) {
  return Object.entries(filter).every(([key, value]) => metadata?.[key] === value);
}

function tooManyConflicts(id) {
  return new RunStoreError('CONFLICT', `${id} kept changing under other writers`, { entity: 'checkpoint', id });
}

function toBase64(bytes) {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

function fromBase64(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}
