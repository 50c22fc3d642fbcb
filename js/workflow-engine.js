// The workflow engine: runs the registered workflows of a store, and starts, signals, cancels
// and awaits runs from anywhere.
//
// Only one engine runs a store's workflows at a time: in pages, the engine of the store's
// leader tab (it starts when its tab becomes the leader and stops when the tab stops leading);
// on `runstore/core` (an app's own worker, Node), the engine of the process, which holds the
// store alone. Every other engine only writes requests into the store: a start is the run's
// first journal event, a signal or a cancellation is a row of the engine's inbox (outbox rows
// in their own namespace, one per signal id, so a signal sent twice is kept once). The running
// engine hears of them through the store's change notices, claims the inbox rows and records
// each one in the run it is for, in the same commit that consumes the row.
import { RunStoreError } from './errors.js';
import { checkName, invalid, isDefinition } from './workflow-define.js';
import { asStored, cancellation, withValue, workflowFailure } from './workflow-events.js';
import { RunDriver } from './workflow-run.js';
import { StepBodies, Timers } from './workflow-bodies.js';
import { noticesOf } from './workflow-notices.js';
import { oneAfterAnother, serially } from './workflow-task.js';
import { WorkflowHandle } from './workflow-handle.js';
import { LeaseKeeper, MAX_TTL_MS, readLeaseOptions } from './workflow-leases.js';

/** Where the engine's inbox rows live in the outbox. */
const INBOX = Object.freeze({ namespace: 'runstore.workflow', taskQueue: 'inbox' });
/** Inbox rows are retried by the engine, never dead-lettered for their attempts. */
const INBOX_MAX_ATTEMPTS = 1_000_000;
/** The checkpoint that names this store's device (the runs it started are the ones it runs). */
const DEVICE_CHECKPOINT = 'runstore.workflow.device';
/** The checkpoints that keep the epoch of the last lease this device took on each workflow (with `leases`). */
const LEASE_CHECKPOINT = 'runstore.workflow.lease/';
/** How many rows one claim takes, and how often the inbox is read when no notice came. */
const CLAIM_LIMIT = 100;
const INBOX_POLL_MS = 2_000;
/** How long an engine's own sync pass (with `leases`) may take before it is given up. */
const SYNC_PASS_MS = 60_000;
/** How many runs load at once when an engine starts. */
const LOADS_AT_ONCE = 8;
const PAGE = { limit: 1000 };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The engine started on each store object: one runs a store's workflows in a process. */
const engines = new WeakMap();

export class WorkflowEngine {
  #store;
  #definitions = new Map();
  #notices;
  #drivers = new Map();
  /** Workflows found not to be this engine's to run (another type, another device). */
  #skipped = new Set();
  /** Of those, the runs of another device: shown, not run. */
  #elsewhere = new Set();
  #running = false;
  #stopped = false;
  #offLeader = () => {};
  #offNotices = () => {};
  #poll = null;
  #loadQueue = [];
  #loadsRunning = 0;
  #onError;
  /** The leases on a sync server's runs (options.leases), or null: runs then run on the device that started them. */
  #leaseOptions = null;
  #keeper = null;
  #leaseTick = null;
  /** Runs that ended here whose last push (and the lease's release) is still to be done. */
  #ending = new Set();
  /** Runs whose copy here is apart from the server's (a pull after a take found a conflict): not asked for again by this engine. */
  #diverged = new Set();
  /** Of the runs of another device, the open ones whose lease this engine asks for: their inbox rows wait. */
  #awaitingLease = new Set();
  /**
   * One sync pass at a time, for the engine's pulls and last pushes; a pass that hangs is
   * given up (passes on a store run one after another, and what it pulled is kept).
   */
  #syncPass = oneAfterAnother(async () => {
    const { url, token, namespace, fetch } = this.#leaseOptions;
    const { syncStore } = await import('./sync.js');
    const stopping = this.#stopping.signal;
    const cut = new AbortController();
    const timer = setTimeout(() => cut.abort(new RunStoreError('UNAVAILABLE', `the workflow engine's sync pass took over ${SYNC_PASS_MS} ms`)), SYNC_PASS_MS);
    const onStop = () => cut.abort(stopping.reason);
    if (stopping.aborted) onStop();
    stopping.addEventListener('abort', onStop, { once: true });
    try {
      return await syncStore(this.#store, { url, token, namespace, fetch, signal: cut.signal, leases: this.leases });
    } finally {
      clearTimeout(timer);
      stopping.removeEventListener('abort', onStop);
    }
  });
  /** Aborted by `stop()`: the engine's sync pass, under way or waiting for another on the store, ends. */
  #stopping = new AbortController();
  device = null;
  bodies = new StepBodies();
  timers = new Timers();

  /** Use `WorkflowEngine.start`. */
  constructor(store, definitions, onError) {
    this.#store = store;
    for (const definition of definitions) this.#definitions.set(definition.name, definition);
    this.#onError = onError;
  }

  /**
   * Starts an engine on `store` (a `RunStore` or a `RunStoreCore`) with the workflows it may
   * run. It runs them where the store is led: at once on runstore/core or a private store; in
   * pages, while this tab is the leader.
   */
  static async start(store, options = {}) {
    if (store === null || typeof store !== 'object' || typeof store.commit !== 'function') {
      throw invalid('store must be an open RunStore or RunStoreCore', 'store');
    }
    const { workflows = [], onError = defaultOnError, leases = null } = options ?? {};
    if (!Array.isArray(workflows) || !workflows.every(isDefinition)) {
      throw invalid('workflows must be an array of what defineWorkflow returns', 'options.workflows');
    }
    const names = new Set();
    for (const { name } of workflows) {
      if (names.has(name)) throw invalid(`workflow ${name} is listed twice`, 'options.workflows');
      names.add(name);
    }
    if (typeof onError !== 'function') throw invalid('onError must be a function', 'options.onError');
    if (engines.has(store)) {
      throw new RunStoreError('BUSY', 'an engine is started on this store already: use it, or stop it first', { field: 'store' });
    }
    const leaseOptions = leases === null ? null : readLeaseOptions(leases);
    const engine = new WorkflowEngine(store, workflows, onError);
    engine.#leaseOptions = leaseOptions;
    engines.set(store, engine);
    try {
      await engine.#begin();
    } catch (error) {
      await engine.stop(); // its timers and listeners go with it
      throw error;
    }
    return engine;
  }

  async #begin() {
    const store = this.#store;
    this.device = await deviceOf(store);
    if (this.#leaseOptions) {
      this.#keeper = new LeaseKeeper(this.#leaseOptions, this.device, leaseEpochs(store), (workflowId) => this.#lost(workflowId));
      // Runs another device holds are asked for again: its lease may have expired.
      this.#leaseTick = setInterval(() => this.#onLeaseTick(), Math.floor(this.#leaseOptions.ttlMs / 3));
      this.#leaseTick.unref?.();
    }
    this.#notices = noticesOf(store);
    this.#offNotices = this.#notices.listen((change) => this.#heard(change));
    if (typeof store.onLeaderChange === 'function') {
      this.#offLeader = store.onLeaderChange((isLeader) => (isLeader ? this.#resume() : this.#pause()).catch((error) => this.report(error)));
    }
    if (store.isLeader !== false) await this.#resume();
  }

  /** Whether this engine runs the store's workflows now. */
  get running() {
    return this.#running;
  }

  get store() {
    return this.#store;
  }

  /** The registered workflow of type `name`, or undefined. */
  definition(name) {
    return this.#definitions.get(name);
  }

  // ----- runs from anywhere -----

  /**
   * Starts a run of `workflow` (what defineWorkflow returned, or its name) under `id` (default:
   * its name and a random suffix) with `input`; resolves to its handle. An id names one
   * workflow for good: starting it again (a retried call, another tab) gives the handle of the
   * one that exists, and CONFLICT if that one is of another type.
   */
  async start(workflow, options = {}) {
    const type = this.#typeOf(workflow);
    const id = options?.id ?? `${type}-${crypto.randomUUID()}`;
    checkName(id, 'options.id');
    const input = asStored(options?.input, 'options.input');
    const runId = crypto.randomUUID();
    const now = Date.now();
    const started = { type: 'started', workflowType: type, runId, recordedAt: now, data: { ...withValue('input', input), origin: this.device, parent: null } };
    try {
      await this.write({
        operations: [
          { op: 'append', workflowId: id, events: [started], expectedSeq: 0 },
          { op: 'upsertVisibility', record: this.startRecord(id, runId, type, now, this.device) },
        ],
      });
    } catch (error) {
      if (error?.code !== 'SEQUENCE_CONFLICT' || error.operation !== 0) throw error;
      const summary = await this.#store.workflowSummary(id);
      if (summary.workflowType !== type) {
        throw new RunStoreError('CONFLICT', `workflow id ${id} is taken by a workflow of type ${summary.workflowType}`, { entity: 'workflow', id });
      }
      return new WorkflowHandle(this, id);
    }
    this.adopt(id);
    return new WorkflowHandle(this, id);
  }

  /**
   * Runs a workflow whose last run failed or was cancelled again: a new run under the same id,
   * from the top, with that run's input (or `options.input`); resolves to its handle. The
   * earlier runs stay in its journal. Two tabs' retries of one run start one new run (both
   * resolve to its handle). CONFLICT for a workflow that runs or completed, or one another
   * device runs.
   */
  async retry(workflowId, options = {}) {
    checkName(workflowId, 'workflowId');
    const summary = await this.#store.workflowSummary(workflowId);
    if (summary.status !== 'failed' && summary.status !== 'cancelled') {
      throw new RunStoreError('CONFLICT', `workflow ${workflowId} is ${summary.status}: only a failed or cancelled workflow runs again`, {
        entity: 'workflow',
        id: workflowId,
        status: summary.status,
      });
    }
    const type = this.#typeOf(summary.workflowType);
    await this.#runsHere(workflowId, summary);
    const firstSeq = await this.#firstSeq(workflowId, summary);
    const [last] = (await this.#store.readHistoryFrom(workflowId, firstSeq, { limit: 1 })).items;
    const input = options && 'input' in options ? asStored(options.input, 'options.input') : last?.data?.input;
    const runId = crypto.randomUUID();
    const now = Date.now();
    const data = { ...withValue('input', input), origin: this.device, parent: null, retryOf: summary.runId };
    const head = summary.head + 1;
    try {
      await this.write({
        operations: [
          { op: 'append', workflowId, events: [{ type: 'started', workflowType: type, runId, recordedAt: now, data }], expectedSeq: summary.head },
          { op: 'upsertVisibility', record: this.startRecord(workflowId, runId, type, now, this.device, head) },
        ],
      });
    } catch (error) {
      // A closed run's journal grows only by a new run: another tab's retry came first.
      if (error?.code !== 'SEQUENCE_CONFLICT' || error.operation !== 0) throw error;
      return new WorkflowHandle(this, workflowId);
    }
    this.adopt(workflowId);
    return new WorkflowHandle(this, workflowId);
  }

  /** The handle of workflow `workflowId`, to await, signal, cancel or describe it. */
  handle(workflowId) {
    checkName(workflowId, 'workflowId');
    return new WorkflowHandle(this, workflowId);
  }

  /**
   * Sends signal `name` with `payload` to the workflow; resolves to `{ signalId, duplicate }`.
   * Kept once per `signalId` (default: a new one): sending it again is `duplicate: true`.
   * NOT_FOUND for a workflow that does not exist.
   */
  async signal(workflowId, name, payload, options = {}) {
    checkName(workflowId, 'workflowId');
    checkName(name, 'name');
    const signalId = options?.signalId ?? crypto.randomUUID();
    checkName(signalId, 'options.signalId');
    const stored = asStored(payload, 'payload');
    await this.#runsHere(workflowId, await this.#store.workflowSummary(workflowId));
    const message = { kind: 'signal', signal: name, signalId, ...withValue('payload', stored) };
    const { outcomes } = await this.write({ operations: [this.inboxInsert(workflowId, `signal/${workflowId}/${signalId}`, message)] });
    return { signalId, duplicate: outcomes[0].inserted === 0 };
  }

  /**
   * Asks the workflow's current run to cancel: CANCELLED is raised at its next await, and the
   * run may clean up. Asking twice asks once. NOT_FOUND for a workflow that does not exist.
   */
  async cancel(workflowId, options = {}) {
    checkName(workflowId, 'workflowId');
    const reason = options?.reason ?? null;
    if (reason !== null && typeof reason !== 'string') throw invalid('reason must be a string', 'options.reason');
    const summary = await this.#store.workflowSummary(workflowId);
    if (isClosed(summary.status)) return;
    await this.#runsHere(workflowId, summary);
    await this.write({ operations: [this.cancelRow(workflowId, reason, summary.runId)] });
  }

  /**
   * Resolves to the workflow's result once its last run completed; rejects with
   * WORKFLOW_FAILED (the error as `cause`), CANCELLED, NON_DETERMINISM (a run that no longer
   * replays), NOT_FOUND, or the `signal`'s reason when it aborts.
   */
  async result(workflowId, { signal } = {}) {
    checkName(workflowId, 'workflowId');
    for (;;) {
      signal?.throwIfAborted();
      const changed = this.#nextChange(workflowId, signal);
      let outcome;
      try {
        outcome = await this.#outcome(workflowId);
      } catch (error) {
        changed.cancel();
        throw error;
      }
      if (outcome) {
        changed.cancel();
        return outcome.value;
      }
      await changed.promise;
    }
  }

  /** Where the workflow stands, from its visibility record: status, step, what it waits on, error. */
  async describe(workflowId) {
    checkName(workflowId, 'workflowId');
    const summary = await this.#store.workflowSummary(workflowId);
    const record = await this.#store.getVisibility(workflowId);
    const attributes = record?.runId === summary.runId ? (record.searchAttributes ?? {}) : {};
    const blocked = record?.runId === summary.runId && record.status === 'blocked';
    const origin = await this.#originOf(workflowId, summary, record);
    return {
      workflowId,
      runId: summary.runId,
      workflowType: summary.workflowType,
      origin,
      runsHere: this.#keeper ? this.#keeper.holds(workflowId) : origin === null || origin === this.device,
      checkedOutUntil: this.#keeper?.checkedOutUntil(workflowId) ?? null,
      status: blocked ? 'blocked' : summary.status,
      startedAt: summary.startedAt,
      closedAt: summary.closedAt,
      head: summary.head,
      steps: attributes.steps ?? 0,
      step: attributes.step ?? null,
      waiting: attributes.waiting ?? null,
      failureReason: record?.runId === summary.runId ? (record.failureReason ?? null) : null,
    };
  }

  /**
   * Stops this engine for good: its runs stop where they are (their state is in the store), and
   * its leases are left to expire (a run's last events may not be pushed yet).
   */
  async stop() {
    if (engines.get(this.#store) === this) engines.delete(this.#store);
    this.#stopped = true;
    this.#offLeader();
    this.#offNotices();
    clearInterval(this.#leaseTick);
    await this.#pause();
    this.timers.close();
    this.#keeper?.stop();
    // No pass of this engine goes on after it stopped, nor waits for another app's pass.
    this.#stopping.abort(new RunStoreError('CANCELLED', 'the workflow engine stopped'));
    await this.#syncPass.settled();
  }

  /**
   * With `options.leases`: the lease a push of `workflowId` goes under, for `store.sync`'s
   * `leases` option (null for a run this engine holds no lease on).
   */
  leases = async (workflowId) => (this.#keeper ? this.#keeper.leaseOf(workflowId) : null);

  /**
   * With `options.leases`: checks `workflowId` out to this device for `forMs` (from the
   * engine's `ttlMs` to 20 days). Its lease is taken for that long and renewed only in its last
   * `ttlMs`, so the run runs here until then, also offline and after a reload, and other devices
   * only show it. Calling it again sets a new end. Resolves to `{ epoch, until }` (`until` by
   * this device's clock). LEASE_HELD while another device holds the lease; UNAVAILABLE when
   * the sync server does not answer; CONFLICT when this copy of the run is apart from the
   * server's (the lease goes back at once).
   */
  async checkout(workflowId, options = {}) {
    checkName(workflowId, 'workflowId');
    if (!this.#keeper) throw invalid('checkout needs an engine started with options.leases', 'options.leases');
    const { ttlMs } = this.#leaseOptions;
    const forMs = options?.forMs;
    if (!Number.isSafeInteger(forMs) || forMs < ttlMs || forMs > MAX_TTL_MS) {
      throw invalid(`forMs must be an integer from the engine's ttlMs (${ttlMs}) to ${MAX_TTL_MS}`, 'options.forMs');
    }
    const outcome = await this.#keeper.checkout(workflowId, forMs);
    if (outcome === 'unavailable') throw new RunStoreError('UNAVAILABLE', `the sync server did not check workflow ${workflowId} out`, { workflowId });
    if (outcome === 'pull') await this.#pullFor(workflowId); // the run goes on here once pulled: asked again at its next load
    if (this.#diverged.has(workflowId)) {
      throw new RunStoreError('CONFLICT', `workflow ${workflowId} here is apart from the server's copy: it is not run here, and its lease was given back`, { workflowId });
    }
    // Shown as another device's until now: it runs here. (A run not in this store yet is
    // taken on when sync brings it.)
    if (this.#skipped.has(workflowId)) {
      this.#elsewhere.delete(workflowId);
      this.#skipped.delete(workflowId);
      this.#awaitingLease.delete(workflowId);
      this.adopt(workflowId);
    }
    return { epoch: (await this.#keeper.leaseOf(workflowId)).epoch, until: this.#keeper.checkedOutUntil(workflowId) };
  }

  /**
   * Whether this engine may run the workflow now: without leases, a run this device started;
   * with them, a run whose lease it holds, taken now if need be (`'pulled'`: taken from
   * another device, whose pushes were pulled; read the run again). `'waiting'`: not now, but
   * this engine asks for the lease again, and the run's messages wait for it.
   */
  async mayRun(workflowId, origin) {
    if (!this.#keeper) return origin === null || origin === this.device;
    if (this.#diverged.has(workflowId)) return false;
    let outcome;
    try {
      outcome = await this.#keeper.take(workflowId);
    } catch (error) {
      this.report(error, workflowId); // the epoch taken could not be kept: asked for again later
      return 'waiting';
    }
    if (outcome === 'held') return true;
    if (outcome !== 'pull') return 'waiting';
    if (await this.#pullFor(workflowId)) return 'pulled';
    return this.#diverged.has(workflowId) ? false : 'waiting';
  }

  /**
   * Whether a step body of the workflow may start now: always without leases; with them, only
   * while its lease holds by this device's clocks. One that no longer holds stops the run here
   * (a device that slept, or a timer that came late, must not start a body past its lease).
   */
  mayStartBody(workflowId) {
    if (!this.#keeper || this.#keeper.valid(workflowId)) return true;
    if (this.#keeper.isHeld(workflowId)) this.#keeper.lapse(workflowId);
    else this.#lost(workflowId);
    return false;
  }

  /** A sync pass under the lease just taken: what the former holder pushed comes here first. */
  async #pullFor(workflowId) {
    try {
      const summary = await this.#syncPass();
      const conflict = summary.conflicts.find((error) => error.workflowId === workflowId);
      if (conflict) {
        // Written here past what the server has: this copy must not run, and the lease goes
        // back at once, for a device whose copy agrees with the server's.
        this.#diverged.add(workflowId);
        await this.#keeper.release(workflowId);
        this.report(conflict, workflowId);
        return false;
      }
      await this.#keeper.pulled(workflowId);
      return true;
    } catch (error) {
      if (!passWillBeTried(error)) this.report(error, workflowId);
      return false;
    }
  }

  /** The lease of a run this engine ran may be another device's now: the run stops here. */
  #lost(workflowId) {
    const driver = this.#drivers.get(workflowId);
    if (!driver) return;
    driver.leaseLost();
    this.skipped(driver, 'its lease was lost', true, true);
  }

  /**
   * Every `ttlMs / 3`: pushes the ends of runs whose last push failed, asks again for the open
   * runs shown here as another device's, whose leases may have expired, and reads the inbox
   * rows that wait for them.
   */
  async #onLeaseTick() {
    for (const workflowId of [...this.#ending]) {
      this.#ending.delete(workflowId);
      this.#finished(workflowId);
    }
    for (const workflowId of [...this.#awaitingLease]) {
      if (!this.#running) return;
      try {
        if ((await this.#store.workflowSummary(workflowId)).status !== 'running') {
          this.#awaitingLease.delete(workflowId); // it ended elsewhere: its messages go nowhere
          continue;
        }
      } catch (error) {
        this.report(error, workflowId);
        continue;
      }
      this.#elsewhere.delete(workflowId);
      this.#skipped.delete(workflowId);
      this.#awaitingLease.delete(workflowId);
      this.adopt(workflowId);
    }
    this.#readInbox();
    // On runstore/core no notice tells the engine of a sync's appends: the feed is read now.
    this.#notices.committed();
  }

  /** A run that ended here: its last events are pushed under its lease, which is then given up. */
  async #finished(workflowId) {
    if (!this.#keeper?.holds(workflowId)) return;
    try {
      const summary = await this.#syncPass();
      // Fenced or apart from the server's copy: the end cannot be pushed under this lease, and
      // a device whose copy agrees with the server's may take the run on.
      const conflict = summary.conflicts.find((error) => error.workflowId === workflowId);
      if (conflict) this.report(conflict, workflowId);
      // Not while another run under the id (a retry) runs here under the same lease.
      if (!this.#drivers.has(workflowId)) await this.#keeper.release(workflowId);
    } catch (error) {
      // Kept, and renewed, until a later try pushes the events and gives it up.
      if (!passWillBeTried(error)) this.report(error, workflowId);
      if (!this.#stopped) this.#ending.add(workflowId);
    }
  }

  /** Whether the engine was started with `leases`: a run runs on whichever device holds its lease. */
  get usesLeases() {
    return this.#keeper !== null;
  }

  /** The device whose engine runs the workflow's current run (null: any). */
  async #originOf(workflowId, summary, record) {
    record ??= await this.#store.getVisibility(workflowId);
    const kept = record?.runId === summary.runId ? record.searchAttributes?.origin : undefined;
    if (kept !== undefined) return kept;
    const firstSeq = await this.#firstSeq(workflowId, summary, record);
    const { items } = await this.#store.readHistoryFrom(workflowId, firstSeq, { limit: 1 });
    return items[0]?.data?.origin ?? null;
  }

  /**
   * Refuses a message to a run that another device runs: it would never be taken. With leases,
   * that is a run whose lease another device holds, as far as this engine knows; a message to
   * a run whose lease is not known to be elsewhere waits for this engine to take it.
   */
  async #runsHere(workflowId, summary) {
    if (this.#keeper) {
      if (this.#diverged.has(workflowId)) {
        throw new RunStoreError('CONFLICT', `workflow ${workflowId} is not run here: this store's copy is apart from the sync server's`, { entity: 'workflow', id: workflowId });
      }
      const holder = this.#keeper.holderElsewhere(workflowId);
      if (holder === null) return;
      throw new RunStoreError('CONFLICT', `workflow ${workflowId} runs on another device (${holder}), which holds its lease; signals and cancellations reach a run only where it runs`, {
        entity: 'workflow',
        id: workflowId,
      });
    }
    const origin = await this.#originOf(workflowId, summary);
    if (origin === null || origin === this.device) return;
    throw new RunStoreError('CONFLICT', `workflow ${workflowId} runs on another device (${origin}); signals and cancellations reach a run only where it runs`, {
      entity: 'workflow',
      id: workflowId,
    });
  }

  // ----- running -----

  async #resume() {
    if (this.#running || this.#stopped) return;
    this.#running = true;
    // Claims of a former leader's engine were never recorded: this engine takes them over.
    const now = Date.now();
    for await (const row of pages((page) => this.#store.listStaleClaims(now + 1, page))) {
      if (!this.#running) return;
      if (row.namespace === INBOX.namespace && row.taskQueue === INBOX.taskQueue) this.#route(row);
    }
    await this.#rescan();
    if (!this.#running) return;
    // A tab catches up on the notices it missed, but a catch-up read that fails in a hand-off
    // waits for the next notice or leader: the inbox is read now and then too. (On
    // runstore/core this process's engines read the feed after each of their commits.)
    if (typeof this.#store.subscribe === 'function') {
      this.#poll = setInterval(() => this.#readInbox(), INBOX_POLL_MS);
      this.#poll.unref?.(); // in Node, the poll alone keeps no process running
    }
  }

  /** Adopts every active workflow and reads the inbox. */
  async #rescan() {
    for await (const workflowId of pages((page) => this.#store.listActive(page))) {
      if (!this.#running) return;
      this.adopt(workflowId);
    }
    this.#readInbox();
  }

  /**
   * Stops running. A tab that stops leading forgets its leases without giving them up: the
   * next leader's engine, of the same device, takes them on.
   */
  async #pause() {
    this.#running = false;
    this.#keeper?.forget();
    clearInterval(this.#poll);
    this.#poll = null;
    for (const driver of this.#drivers.values()) driver.stop();
    this.#drivers.clear();
    this.#skipped.clear();
    this.#elsewhere.clear();
    this.#awaitingLease.clear();
    this.#loadQueue = [];
    this.bodies.abortAll();
    this.timers.cancelAll();
  }

  /** Runs workflow `workflowId` here, unless it runs already or is not this engine's. */
  adopt(workflowId) {
    if (!this.#running || this.#drivers.has(workflowId) || this.#skipped.has(workflowId)) return;
    this.#driver(workflowId);
  }

  #driver(workflowId) {
    let driver = this.#drivers.get(workflowId);
    if (driver) return driver;
    driver = new RunDriver(this, workflowId);
    this.#drivers.set(workflowId, driver);
    this.#loadQueue.push(driver);
    this.#nextLoads();
    return driver;
  }

  #nextLoads() {
    while (this.#loadsRunning < LOADS_AT_ONCE && this.#loadQueue.length > 0) {
      const driver = this.#loadQueue.shift();
      this.#loadsRunning++;
      driver
        .load()
        .catch((error) => this.report(error, driver.workflowId))
        .finally(() => {
          this.#loadsRunning--;
          this.#nextLoads();
        });
    }
  }

  /** A driver whose run ended: forgotten, and whoever awaits it is told. */
  forget(driver) {
    if (this.#drivers.get(driver.workflowId) === driver) this.#drivers.delete(driver.workflowId);
    if (driver.state === 'ended') this.#finished(driver.workflowId);
  }

  /**
   * A driver whose run is not this engine's to run. A run of another device (pulled by sync)
   * is shown: its visibility record, which sync does not carry, is written from its journal,
   * again whenever its journal changes.
   */
  skipped(driver, reason, elsewhere = false, awaitingLease = false) {
    this.forget(driver);
    this.#skipped.add(driver.workflowId);
    if (awaitingLease) this.#awaitingLease.add(driver.workflowId);
    // Taken, then found ended (its end pulled with the lease): nothing of it runs here.
    else if (this.#keeper?.isHeld(driver.workflowId)) this.#keeper.release(driver.workflowId);
    if (elsewhere) {
      this.#elsewhere.add(driver.workflowId);
      this.#show(driver.workflowId);
      return;
    }
    this.report(new RunStoreError('NOT_FOUND', `workflow ${driver.workflowId} is not run here: ${reason}`, { workflowId: driver.workflowId }), driver.workflowId);
  }

  /**
   * Whether an ended run is one of another device's that this store has no record of (pulled
   * by sync after it ended there).
   */
  async endedElsewhere(workflowId, summary) {
    if (!this.#definitions.has(summary.workflowType)) return false;
    const record = await this.#store.getVisibility(workflowId);
    if (record?.runId === summary.runId && record.head === summary.head) return false;
    const origin = await this.#originOf(workflowId, summary, record);
    return origin !== null && origin !== this.device;
  }

  /** Writes the visibility record of a run this engine does not run, from its journal. */
  async #show(workflowId) {
    try {
      const record = await elsewhereRecord(this.#store, workflowId, await this.#store.workflowSummary(workflowId));
      await this.write({ operations: [{ op: 'upsertVisibility', record }] });
    } catch (error) {
      // CONFLICT: a record of a later head is there already.
      if (error?.code !== 'CONFLICT') this.report(error, workflowId);
    }
  }

  /** Reads the workflow's current run: `{ started, history, head, firstSeq }`, `{ closed }`, or null. */
  async readRun(workflowId) {
    const store = this.#store;
    let summary;
    try {
      summary = await store.workflowSummary(workflowId);
    } catch (error) {
      if (error?.code === 'NOT_FOUND') return null;
      throw error;
    }
    if (summary.status !== 'running') return { closed: true, summary };
    const firstSeq = await this.#firstSeq(workflowId, summary);
    const events = [];
    for await (const event of pages((page) => store.readHistoryFrom(workflowId, firstSeq, page), 10_000)) events.push(event);
    const [started, ...history] = events;
    if (started?.type !== 'started' || started.runId !== summary.runId) {
      throw new RunStoreError('CORRUPT', `workflow ${workflowId}: the run ${summary.runId} does not start at seq ${firstSeq}`, { workflowId });
    }
    return { started, history, head: summary.head, firstSeq };
  }

  /** Where the current run starts: kept in its visibility record, else found in the run chain. */
  async #firstSeq(workflowId, summary, record) {
    record ??= await this.#store.getVisibility(workflowId);
    const kept = record?.runId === summary.runId ? record.searchAttributes?.firstSeq : undefined;
    if (Number.isSafeInteger(kept) && kept > 0) return kept;
    const chain = await this.#store.readRunChain(workflowId);
    return chain.at(-1)?.firstSeq ?? 1;
  }

  // ----- the inbox -----

  /** Claims the inbox's due rows and hands each to its workflow's run. */
  #readInbox = serially(async () => {
    if (!this.#running) return false;
    try {
      const rows = await this.#store.claimOutbox(Date.now(), CLAIM_LIMIT, { scope: INBOX });
      if (!this.#running) return false;
      for (const row of rows) this.#route(row);
      return rows.length === CLAIM_LIMIT;
    } catch (error) {
      this.report(error);
      return false;
    }
  });

  #route(row) {
    let message;
    try {
      message = JSON.parse(decoder.decode(row.input));
    } catch {
      return this.settleRow(row, 'the inbox row is not a message of the workflow engine');
    }
    if (this.#awaitingLease.has(row.workflowId)) return this.deferRow(row);
    if (this.#skipped.has(row.workflowId)) return this.settleRow(row, `workflow ${row.workflowId} is not run by this engine`);
    this.#driver(row.workflowId).receive({ ...row, message });
  }

  /** Settles an inbox row that no run records: done (reason null), or a dead letter with the reason. */
  settleRow(row, reason) {
    const { dispatchKey, claimToken } = row;
    const operation = reason === null ? { op: 'completeOutbox', dispatchKey, claimToken } : { op: 'failOutbox', dispatchKey, claimToken, reason };
    this.write({ operations: [operation] }).catch((error) => {
      if (error?.code !== 'CONFLICT') this.report(error, row.workflowId);
    });
  }

  /**
   * Puts an inbox row back for later, its attempts unspent: its run waits for its lease, which
   * this engine asks for again every `ttlMs / 3`.
   */
  deferRow(row) {
    const { dispatchKey, claimToken, attempt } = row;
    const visibleAfter = Date.now() + Math.floor(this.#leaseOptions.ttlMs / 3);
    this.write({ operations: [{ op: 'retryOutbox', dispatchKey, claimToken, nextAttempt: attempt, visibleAfter }] }).catch((error) => {
      if (error?.code !== 'CONFLICT') this.report(error, row.workflowId);
    });
  }

  /** The operation that puts a message in the inbox of `workflowId` under `key` (kept once per key). */
  inboxInsert(workflowId, key, message) {
    const row = {
      dispatchKey: `runstore.workflow/${key}`,
      workflowId,
      ordinal: 0,
      activityType: `runstore.workflow.${message.kind}`,
      input: encoder.encode(JSON.stringify(message)),
      visibleAfter: Date.now(),
      ...INBOX,
      maxAttempts: INBOX_MAX_ATTEMPTS,
    };
    return { op: 'insertOutbox', rows: [row] };
  }

  /** The operation that asks `workflowId` to cancel, kept once per `asker` (a run id). */
  cancelRow(workflowId, reason, asker) {
    return this.inboxInsert(workflowId, `cancel/${workflowId}/${asker}`, { kind: 'cancel', reason });
  }

  // ----- the store -----

  /** Commits `step`; on a store without change notices (runstore/core) tells this process's engines what changed. */
  async write(step) {
    const outcome = await this.#notices.commit(step);
    // A message for a run (a child's end, a cancellation) goes to the run at once if it runs here.
    if (step.operations.some((op) => op.op === 'insertOutbox')) this.#readInbox();
    return outcome;
  }

  /** The visibility record of a run that just started, its `started` event at seq `head`. */
  startRecord(workflowId, runId, workflowType, now, origin, head = 1) {
    return {
      workflowId,
      runId,
      workflowType,
      status: 'running',
      startTime: now,
      head,
      searchAttributes: { engine: 'runstore/workflow', origin, firstSeq: head, steps: 0, step: null, waiting: null },
    };
  }

  #heard(change) {
    if (!this.#running) return;
    if (change.reset) {
      // The feed could not say what changed (an import replaced the store): look at all of it.
      this.#rescan().catch((error) => this.report(error));
      return;
    }
    if (change.areas.includes('journal')) {
      for (const workflowId of change.workflowIds) {
        if (!this.#elsewhere.has(workflowId)) this.adopt(workflowId);
        else {
          this.#show(workflowId);
          // Another run under its id (a retry elsewhere) may need this engine: asked for at the next tick.
          if (this.#keeper && !this.#diverged.has(workflowId)) this.#awaitingLease.add(workflowId);
        }
      }
    }
    // An outbox write may have put a message in the inbox.
    if (change.areas.includes('outbox')) this.#readInbox();
  }

  /**
   * A promise that resolves at the next change notice naming `workflowId`, heard on the store
   * itself (a stopped engine's handles still hear it); `cancel` drops it.
   */
  #nextChange(workflowId, signal) {
    let stop = () => {};
    const running = this.#running && this.#drivers.get(workflowId);
    const promise = new Promise((resolve, reject) => {
      // A run this engine runs says itself when it ends, stops or is blocked: no reads at each
      // of its commits. Any other is looked at again at each notice that names it.
      if (running) stop = running.onSettled(resolve);
      else {
        stop = this.#notices.listen((change) => {
          if (change.reset || change.workflowIds.includes(workflowId)) resolve();
        });
      }
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
    promise.then(stop, stop);
    return { promise, cancel: stop };
  }

  /** The workflow's outcome (`{ value }`) once its last run ended; throws how it ended otherwise; null while it runs. */
  async #outcome(workflowId) {
    const store = this.#store;
    const summary = await store.workflowSummary(workflowId);
    if (!isClosed(summary.status)) {
      const record = await store.getVisibility(workflowId);
      if (record?.status === 'blocked' && record.runId === summary.runId) {
        throw new RunStoreError('NON_DETERMINISM', record.failureReason ?? `workflow ${workflowId} no longer replays`, { workflowId, runId: summary.runId });
      }
      return null;
    }
    const { items } = await store.readHistoryFrom(workflowId, Math.max(1, summary.head - 9), { limit: 10 });
    const last = items.findLast((event) => event.type === summary.status);
    if (summary.status === 'completed') return { value: last?.data?.result };
    if (summary.status === 'cancelled') throw cancellation(workflowId, last?.data?.reason ?? null);
    throw workflowFailure(workflowId, last?.data?.error ?? { message: last?.reason });
  }

  #typeOf(workflow) {
    const name = isDefinition(workflow) ? workflow.name : workflow;
    if (typeof name !== 'string' || !this.#definitions.has(name)) {
      throw invalid(`workflow ${String(name)} is not registered with this engine (WorkflowEngine.start's workflows)`, 'workflow');
    }
    return name;
  }

  /** A failure nobody awaits (a run's commit, a load): given to `onError`. */
  report(error, workflowId = null) {
    try {
      this.#onError(error, { workflowId });
    } catch {
      // onError's own failure must not stop the engine.
    }
  }
}

const isClosed = (status) => status === 'completed' || status === 'failed' || status === 'cancelled';

function defaultOnError(error, { workflowId }) {
  if (error?.code === 'NOT_FOUND') return; // a run of another type or device: not this engine's
  console.error(`runstore/workflow${workflowId ? ` (${workflowId})` : ''}:`, error);
}

/** This store's device id, made on first use. */
async function deviceOf(store) {
  for (;;) {
    try {
      return (await store.loadCheckpoint(DEVICE_CHECKPOINT)).state.device;
    } catch (error) {
      if (error?.code !== 'NOT_FOUND') throw error;
    }
    const device = crypto.randomUUID();
    try {
      await store.compareAndSwapCheckpoint({ checkpointId: DEVICE_CHECKPOINT, revision: 0, state: { device }, updatedAt: Date.now() }, null);
      return device;
    } catch (error) {
      if (error?.code !== 'CONFLICT') throw error; // another tab made it first: read it
    }
  }
}

/**
 * Whether a sync pass of the engine's failed as passes do while the server is out of reach, or
 * cut short by its time limit or the engine's stop (tried again, not reported).
 */
function passWillBeTried(error) {
  return error?.code === 'UNAVAILABLE' || error?.code === 'CANCELLED' || error?.name === 'TimeoutError' || error?.name === 'AbortError';
}

/** The epochs of the last leases this device took (with `leases`), kept in the store's checkpoints. */
function leaseEpochs(store) {
  const checkpointId = (workflowId) => LEASE_CHECKPOINT + workflowId;
  const load = async (workflowId) => {
    try {
      return await store.loadCheckpoint(checkpointId(workflowId));
    } catch (error) {
      if (error?.code === 'NOT_FOUND') return null;
      throw error;
    }
  };
  return {
    /** `{ epoch, pulled, checkoutUntil }` (the end of a checkout, or null), or null. */
    async load(workflowId) {
      const state = (await load(workflowId))?.state;
      return state ? { epoch: state.epoch, pulled: state.pulled !== false, checkoutUntil: state.checkoutUntil ?? null } : null;
    },
    async save(workflowId, { epoch, pulled, checkoutUntil = null }) {
      const stored = await load(workflowId);
      const revision = stored ? stored.revision + 1 : 0;
      const state = { epoch, pulled, ...(checkoutUntil === null ? {} : { checkoutUntil }) };
      const checkpoint = { checkpointId: checkpointId(workflowId), revision, state, updatedAt: Date.now() };
      await store.compareAndSwapCheckpoint(checkpoint, stored ? stored.revision : null);
    },
  };
}

/**
 * The visibility record of a run another device runs, from its journal as far as it goes here
 * (also what runstore/inspector's copy of a sync server's namespace shows of each workflow).
 */
export async function elsewhereRecord(store, workflowId, summary) {
  const chain = await store.readRunChain(workflowId);
  const firstSeq = chain.at(-1)?.firstSeq ?? 1;
  const events = [];
  for await (const event of pages((page) => store.readHistoryFrom(workflowId, firstSeq, page), 10_000)) events.push(event);
  const steps = new Map(events.filter((e) => e.name === 'step').map((e) => [e.data.n, e.data.step]));
  const done = events.filter((e) => e.name === 'stepDone');
  const failed = events.findLast((e) => e.type === 'failed');
  return {
    workflowId,
    runId: summary.runId,
    workflowType: summary.workflowType,
    status: summary.status,
    startTime: summary.startedAt,
    // Started and ended by devices whose clocks differ: it closed no earlier than it started.
    closeTime: summary.closedAt === null || summary.closedAt === undefined ? null : Math.max(summary.closedAt, summary.startedAt),
    failureReason: failed?.reason ?? null,
    head: summary.head,
    searchAttributes: {
      engine: 'runstore/workflow',
      origin: events[0]?.data?.origin ?? null,
      firstSeq,
      steps: done.length,
      step: steps.get(done.at(-1)?.data.n) ?? null,
      waiting: null,
    },
  };
}

/** Every item of a paged listing, page by page. */
async function* pages(read, limit = PAGE.limit) {
  let cursor = null;
  do {
    const page = await read({ limit, cursor });
    yield* page.items;
    cursor = page.nextCursor;
  } while (cursor);
}

