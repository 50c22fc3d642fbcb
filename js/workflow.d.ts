import type { RunStore, RunStoreError } from './index.js';
import type { RunStoreCore } from '../pkg/runstore.js';
import type { Operation } from './types.js';

export { RunStoreError, ErrorCode } from './index.js';

/** A workflow: its type name and its function. Made by `defineWorkflow`. */
export interface Workflow<I = any, O = any> {
  readonly name: string;
  readonly run: (ctx: WorkflowContext, input: I) => Promise<O>;
}

/**
 * Defines a workflow of type `name`: an async function of `(ctx, input)`. Its steps, timers,
 * signals and children go through `ctx` and are recorded; on resume the function runs again
 * from the top and gets what was recorded. Anything else it does must give the same answers
 * on every run (no `Date.now()`, `Math.random()` or I/O outside steps); it awaits only what
 * `ctx` gives it. Input and result are JSON values. INVALID_INPUT for a bad name.
 */
export declare function defineWorkflow<I = any, O = any>(
  name: string,
  run: (ctx: WorkflowContext, input: I) => Promise<O>,
): Workflow<I, O>;

/** Thrown by a step body for a failure another attempt would not mend: the step fails at once. */
export declare class FatalError extends Error {
  constructor(message?: string, options?: { cause?: unknown });
  readonly name: 'FatalError';
}

/** How a step is tried again after its body throws. Default: 3 attempts, 1 s, then 2 s. */
export interface RetryPolicy {
  /** Attempts in all, the first included (default 3). */
  maxAttempts?: number;
  /** The wait before the second attempt, in ms (default 1000). */
  initialIntervalMs?: number;
  /** Each later wait is this many times the one before (default 2). */
  backoffCoefficient?: number;
  /** The longest wait, in ms (default 60000). */
  maxIntervalMs?: number;
}

export interface StepOptions {
  /**
   * `true`: the body is never run twice. If the engine stopped while it ran (a closed tab, a
   * crash), the step throws OUTCOME_UNKNOWN instead of running it again.
   */
  once?: boolean;
  retry?: RetryPolicy;
}

/** What a step body gets. */
export interface StepCall {
  /** The same for every attempt of this step of this run: pass it to the service called. */
  idempotencyKey: string;
  /** 1 for the first attempt; an attempt that was cut off (a crash) counts too. */
  attempt: number;
  /** Aborts when the run is cancelled or this engine stops running it. */
  signal: AbortSignal;
  /** Stages a store operation that commits together with the step's result (or not at all). */
  write(operation: Operation): void;
}

export interface ChildOptions<I> {
  /** The child's workflow id (default: the parent's id, `/`, the child's type and its occurrence). */
  id?: string;
  input?: I;
}

/** What a workflow's function calls. Every call is recorded and replayed. */
export interface WorkflowContext {
  readonly workflowId: string;
  readonly runId: string;
  readonly workflowType: string;
  /** Whether the function is being replayed from the history (to keep logs from repeating). */
  readonly isReplaying: boolean;
  /** Whether the run was asked to cancel. */
  readonly cancelled: boolean;
  /**
   * Runs `body` and records its result (a JSON value; undefined stays undefined). On replay the
   * recorded result comes back and the body does not run. After a crash it runs again only if
   * no result was recorded, with the same `idempotencyKey` and the next `attempt`. Its last
   * failure throws STEP_FAILED (the body's error as `cause`). Step names need not be unique:
   * the second `quote` is `quote#2`.
   */
  step<T>(name: string, body: (call: StepCall) => T | Promise<T>, options?: StepOptions): Promise<T>;
  /** Sleeps `ms` on a durable timer: it fires after reloads, crashes and closed browsers, never early. */
  sleep(name: string, ms: number): Promise<void>;
  /** Sleeps until `time` (ms since the epoch) on a durable timer. */
  sleepUntil(name: string, time: number): Promise<void>;
  /**
   * Waits for signal `name`; resolves to its payload, or undefined after `timeoutMs`. Signals
   * that came before the wait are kept, in the order they came.
   */
  waitForSignal<T = any>(name: string, options?: { timeoutMs?: number }): Promise<T | undefined>;
  /** Starts a child workflow and resolves to its result; WORKFLOW_FAILED or CANCELLED as it ends otherwise. */
  child<I, O>(workflow: Workflow<I, O>, options?: ChildOptions<I>): Promise<O>;
  /** Starts a child workflow that runs on its own; resolves once it started. CONFLICT for a taken id. */
  startChild<I>(workflow: Workflow<I, any>, options?: ChildOptions<I>): Promise<{ workflowId: string }>;
  /** Ends this run and starts the next with `input` on a fresh history (a loop that never grows one). */
  continueAsNew(input?: unknown): Promise<never>;
  /** `Date.now()`, recorded. */
  now(): number;
  /** `Math.random()`, recorded. */
  random(): number;
  /** `crypto.randomUUID()`, recorded. */
  uuid(): string;
  /**
   * Whether this run takes the new code path of change `id`: true for runs that reach it with
   * the new code, false for runs that passed this point before the change.
   */
  patched(id: string): boolean;
}

/** A workflow as its callers hold it: by id, from any tab, worker or process. */
export declare class WorkflowHandle<O = any> {
  readonly workflowId: string;
  /** See `WorkflowEngine#result`. */
  result(options?: { signal?: AbortSignal }): Promise<O>;
  /** See `WorkflowEngine#describe`. */
  describe(): Promise<WorkflowDescription>;
  /** See `WorkflowEngine#signal`. */
  signal(name: string, payload?: unknown, options?: { signalId?: string }): Promise<SignalOutcome>;
  /** See `WorkflowEngine#cancel`. */
  cancel(options?: { reason?: string }): Promise<void>;
  /** See `WorkflowEngine#retry`. */
  retry(options?: { input?: unknown }): Promise<WorkflowHandle<O>>;
}

export interface SignalOutcome {
  signalId: string;
  /** Whether a signal of this id had been sent before (this one changed nothing). */
  duplicate: boolean;
}

/** Where a workflow stands (its visibility record and journal summary). */
export interface WorkflowDescription {
  workflowId: string;
  runId: string | null;
  workflowType: string | null;
  /** The device (`WorkflowEngine#device`) that started the current run, whose engine runs it unless engines have `leases`; null: any. */
  origin: string | null;
  /**
   * Whether this store's engine runs it (else it was started on another device and pulled by
   * sync); with `leases`, whether this engine holds the run's lease now.
   */
  runsHere: boolean;
  /** With `leases`: the end of this engine's checkout of the run (`WorkflowEngine#checkout`), by this device's clock, while it lasts; else null. */
  checkedOutUntil: number | null;
  /** `blocked`: its code no longer replays its history (NON_DETERMINISM, in `failureReason`). */
  status: 'running' | 'completed' | 'failed' | 'cancelled' | 'blocked' | 'pending' | 'paused' | 'continuedAsNew';
  startedAt: number | null;
  closedAt: number | null;
  head: number;
  /** Steps completed in the current run. */
  steps: number;
  /** The last step that completed or failed. */
  step: string | null;
  /** What the run waits on: `step quote`, `sleep cool-off`, `wait approve`, `child shipment order-42/ship`. */
  waiting: string | null;
  failureReason: string | null;
}

export interface EngineOptions {
  /** Every workflow this engine may run, children included. */
  workflows: Workflow[];
  /** Failures nobody awaits (a run's commit, a run that no longer replays). Default: console.error. */
  onError?: (error: RunStoreError, context: { workflowId: string | null }) => void;
  /**
   * For a store that syncs with a runstore sync server: the engine runs a run only while it
   * holds the run's lease there (docs/servers.md, "Leases"). It takes the lease before running
   * the run, renews it every `ttlMs / 3`, pushes the run's last events and gives the lease up
   * when the run ends, and stops the run if a renewal is refused or none is answered within
   * `ttlMs` by this device's clock. It takes over another device's run once its lease has
   * expired, after pulling what that device pushed. Without it, a run runs on the device that
   * started it. Pass `engine.leases` to `store.sync` so that pushes go under the leases.
   */
  leases?: {
    url: string;
    token: string;
    /** Default `"default"`. */
    namespace?: string;
    /** How long a lease lasts (default 30000, at least 300). */
    ttlMs?: number;
    fetch?: typeof fetch;
  } | null;
}

/**
 * Runs a store's workflows, and starts, signals, cancels and awaits runs. On a `RunStore`
 * shared by tabs, every tab starts an engine and the leader tab's runs the workflows; on
 * `runstore/core` (a worker, Node) the engine runs them in the process.
 */
export declare class WorkflowEngine {
  private constructor();
  /** Starts an engine on `store`. BUSY if one is started on that store object already. */
  static start(store: RunStore | RunStoreCore, options: EngineOptions): Promise<WorkflowEngine>;
  /** Whether this engine runs the store's workflows now. */
  readonly running: boolean;
  /**
   * This store's device id (made once per store, kept in it): the runs started here carry it,
   * and only they run here. A store that syncs shows other devices' runs without running them,
   * unless the engine has `leases`: then it runs the runs whose leases it holds.
   */
  readonly device: string;
  /**
   * Starts a run; resolves to its handle. An id names one workflow for good: starting it again
   * gives the handle of the one there is (CONFLICT if it is of another type).
   */
  start<I, O>(workflow: Workflow<I, O> | string, options?: { id?: string; input?: I }): Promise<WorkflowHandle<O>>;
  handle<O = any>(workflowId: string): WorkflowHandle<O>;
  /**
   * Sends signal `name`, kept once per `signalId`. NOT_FOUND for an unknown workflow, CONFLICT
   * for a run of another device (with `leases`: one whose lease another device holds, as this
   * engine last heard; a run whose lease is not held here yet gets it once it is).
   */
  signal(workflowId: string, name: string, payload?: unknown, options?: { signalId?: string }): Promise<SignalOutcome>;
  /**
   * Runs a workflow whose last run failed or was cancelled again: a new run under the same id,
   * from the top, with that run's input (or `options.input`). CONFLICT for one that runs or
   * completed, or that another device runs.
   */
  retry<O = any>(workflowId: string, options?: { input?: unknown }): Promise<WorkflowHandle<O>>;
  /** Asks the workflow to cancel: CANCELLED is raised at its next await. */
  cancel(workflowId: string, options?: { reason?: string }): Promise<void>;
  /**
   * The workflow's result once its last run completed. Rejects with WORKFLOW_FAILED, CANCELLED,
   * NON_DETERMINISM, NOT_FOUND, or the signal's reason.
   */
  result<O = any>(workflowId: string, options?: { signal?: AbortSignal }): Promise<O>;
  describe(workflowId: string): Promise<WorkflowDescription>;
  /**
   * With `options.leases`: the lease a push of the workflow goes under (`store.sync`'s `leases`
   * option): the one held, else the last this device took (its epoch is kept in the store), or
   * null.
   */
  readonly leases: (workflowId: string) => Promise<{ holder: string; epoch: number } | null>;
  /**
   * With `options.leases`: checks the workflow out to this device for `forMs` (from the
   * engine's `ttlMs` to 20 days). Its lease is taken for that long and renewed only in its last
   * `ttlMs`: the run runs here until then, also offline and after a reload, and other devices
   * only show it. Calling it again sets a new end. `until` is by this device's clock. Rejects
   * with LEASE_HELD (with `holder`) while another device holds the lease, UNAVAILABLE when the
   * sync server does not answer, CONFLICT when this copy of the run is apart from the server's
   * (the lease goes back at once), INVALID_INPUT without `leases`.
   */
  checkout(workflowId: string, options: { forMs: number }): Promise<{ epoch: number; until: number }>;
  /** Whether the engine was started with `leases` (a run runs on whichever device holds its lease). */
  readonly usesLeases: boolean;
  /** Stops this engine: its runs stay in the store where they are, for the next engine; its leases are left to expire. */
  stop(): Promise<void>;
}
