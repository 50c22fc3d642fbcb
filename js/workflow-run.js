// The driver of one workflow in the engine: loads its current run from the store, replays it
// in an Execution, and does what the execution's commands ask for once they are recorded
// (runs step bodies, arms timers, starts children). When a commit fails it loads the run again
// from the store, which is the only state there is; when the run ends it says so to the engine.
import { isFatal, retryDelayMs } from './workflow-define.js';
import { asStored, custom, errorRecord, isCancellation, withValue } from './workflow-events.js';
import { Execution } from './workflow-execution.js';

/** The longest pause before loading a run again after failed commits. */
const MAX_RELOAD_DELAY_MS = 30_000;

export class RunDriver {
  #engine;
  workflowId;
  /** The execution of the current run, or null. */
  exec = null;
  /** `idle`, `running`, `blocked`, `ended`, `stopped`, or `skipped` (not this engine's to run). */
  state = 'idle';
  /** Inbox rows claimed for this workflow and not yet recorded: dispatch key → row. */
  #rows = new Map();
  /** Step commands whose body runs or may run, per execution. */
  #bodies = new Set();
  #timers = new Set();
  #loading = null;
  #reloadDelay = 0;
  /** Whether rows go to the execution as they come (its replay and the held rows are done). */
  #feeding = false;
  #settled = new Set();

  constructor(engine, workflowId) {
    this.#engine = engine;
    this.workflowId = workflowId;
  }

  /**
   * Calls `listener` once the run ends, stops, is blocked or is found not to be this engine's
   * (whatever makes a waiter look at the store again); returns the function that drops it.
   */
  onSettled(listener) {
    this.#settled.add(listener);
    return () => this.#settled.delete(listener);
  }

  #settle() {
    const listeners = [...this.#settled];
    this.#settled.clear();
    for (const listener of listeners) listener();
  }

  /** Loads the run and runs it; resolves once it is live (or found not to be this engine's). */
  load() {
    this.#loading ??= this.#load().finally(() => {
      this.#loading = null;
    });
    return this.#loading;
  }

  async #load() {
    const engine = this.#engine;
    let run;
    try {
      run = await engine.readRun(this.workflowId);
    } catch (error) {
      return this.#retryLoad(error);
    }
    if (this.state === 'stopped') return;
    if (!run) return this.#end(`no workflow ${this.workflowId}`);
    if (run.closed) {
      if (await engine.endedElsewhere(this.workflowId, run.summary)) return this.#skip('the run belongs to another device', true);
      return this.#end(`workflow ${this.workflowId} has ended`);
    }
    const def = engine.definition(run.started.workflowType);
    if (!def) return this.#skip(`workflow type ${run.started.workflowType} is not registered with this engine`);
    const { origin = null, parent = null } = run.started.data ?? {};
    const here = await engine.mayRun(this.workflowId, origin);
    if (this.state === 'stopped') return;
    // Taken over from another device: what it pushed was pulled, and the run is read again.
    if (here === 'pulled') return this.#load();
    if (here === 'waiting') return this.#skip('its lease is held by another device or cannot be taken now', true, true);
    if (!here) return this.#skip('the run belongs to another device', true);
    const exec = new Execution(this, {
      workflowId: this.workflowId,
      runId: run.started.runId,
      def,
      input: run.started.data?.input,
      startedAt: run.started.recordedAt,
      head: run.head,
      firstSeq: run.firstSeq,
      origin,
      parent,
    });
    await this.#run(exec, run.history);
  }

  async #run(exec, history) {
    this.exec = exec;
    this.state = 'running';
    this.#feeding = false;
    await exec.replay(history);
    if (exec.dead || this.exec !== exec) return;
    // Held rows go first, in the order they came; rows that come meanwhile wait behind them.
    for (const row of await this.#unrecordedRows()) this.#feed(exec, row);
    if (exec.dead || this.exec !== exec) return;
    this.#feeding = true;
    for (const row of this.#rows.values()) this.#feed(exec, row);
  }

  /** The held rows still claimed by their claims: a row whose recording landed unseen is dropped. */
  async #unrecordedRows() {
    const rows = [];
    for (const row of this.#rows.values()) {
      const state = await this.#engine.store.outboxRowState(row.dispatchKey);
      if (state?.status === 'claimed' && state.claimToken === row.claimToken) rows.push(row);
      else this.#rows.delete(row.dispatchKey);
    }
    return rows;
  }

  /** An inbox row claimed for this workflow: recorded by the run, or settled if the run is not here. */
  receive(row) {
    if (this.#rows.has(row.dispatchKey)) return;
    this.#rows.set(row.dispatchKey, row);
    if (this.state === 'ended' || this.state === 'skipped') return this.#settleRows(this.reason);
    if (this.#feeding && this.exec && !this.exec.dead) this.#feed(this.exec, row);
  }

  #feed(exec, row) {
    if (row.fedTo === exec) return;
    row.fedTo = exec;
    const { message } = row;
    const consume = { op: 'completeOutbox', dispatchKey: row.dispatchKey, claimToken: row.claimToken };
    const after = () => this.#rows.delete(row.dispatchKey);
    if (message.kind === 'signal') {
      const data = { signal: message.signal, signalId: message.signalId, ...withValue('payload', message.payload) };
      return exec.enqueue({ name: 'signal', data, ops: [consume], after });
    }
    if (message.kind === 'cancel') {
      return exec.enqueue({ name: 'cancelRequested', data: { reason: message.reason ?? null }, ops: [consume], after });
    }
    if (message.kind === 'child' && message.runId === exec.runId && exec.command(message.n)?.kind === 'child') {
      const data = { n: message.n, workflowId: message.workflowId, status: message.status, ...withValue('result', message.result) };
      if (message.error) data.error = message.error;
      return exec.enqueue({ name: 'childDone', data, ops: [consume], after });
    }
    // A child of an earlier run (before a continue-as-new), or a message this engine does not
    // know: consumed without an event.
    this.#rows.delete(row.dispatchKey);
    this.#engine.settleRow(row, null);
  }

  /** Dead-letters the held rows: the run they were for is not here to take them. */
  #settleRows(reason) {
    for (const row of this.#rows.values()) this.#engine.settleRow(row, reason);
    this.#rows.clear();
  }

  #end(reason) {
    this.state = 'ended';
    this.reason = reason;
    this.#settleRows(reason);
    this.#engine.forget(this);
    this.#settle();
  }

  /** Not this engine's to run; `awaitingLease`: not yet, and the held rows wait for it in the inbox. */
  #skip(reason, elsewhere = false, awaitingLease = false) {
    this.state = 'skipped';
    this.reason = reason;
    if (awaitingLease) {
      for (const row of this.#rows.values()) this.#engine.deferRow(row);
      this.#rows.clear();
    } else {
      this.#settleRows(reason);
    }
    this.#engine.skipped(this, reason, elsewhere, awaitingLease);
    this.#settle();
  }

  /** Stops for good because the run's lease may be another device's now: the held rows go back to the inbox. */
  leaseLost() {
    this.stop();
    for (const row of this.#rows.values()) this.#engine.deferRow(row);
    this.#rows.clear();
  }

  /** Stops for good (the engine stopped or lost its lead): nothing more is written. */
  stop() {
    this.state = 'stopped';
    this.#feeding = false;
    if (this.exec) this.exec.dead = true;
    this.#stopBodies();
    for (const cancel of this.#timers) cancel();
    this.#timers.clear();
    this.#settle();
  }

  #stopBodies() {
    for (const command of this.#bodies) this.#engine.bodies.abort(command.key);
    this.#bodies.clear();
  }

  // ----- what the execution asks of its host -----

  commit(exec, step) {
    return this.#engine.write(step);
  }

  /** Calls `fire` at `time` (unless the run stops first); returns the function that cancels it. */
  later(time, fire) {
    return this.#at(time, fire);
  }

  /** A commit of the run landed: the next failure starts its pauses afresh. */
  landed() {
    this.#reloadDelay = 0;
  }

  /** After a replay: carries on with a command the history left open. */
  resume(exec, command) {
    switch (command.kind) {
      case 'step':
        return this.#recoverStep(exec, command);
      case 'sleep':
        return this.armTimer(exec, command);
      case 'wait':
        if (command.fireAt !== null && command.fireAt !== undefined) this.armTimer(exec, command);
        return;
      default:
    }
  }

  /** The ledger operation that moves `command`'s effect record to `status`. */
  ledger(exec, command, status, attempt = command.attempt) {
    const revision = command.ledgerRevision === null || command.ledgerRevision === undefined ? 0 : command.ledgerRevision + 1;
    command.ledgerRevision = revision;
    const record = {
      effectId: command.key,
      capabilityId: command.stepName,
      idempotencyKey: command.key,
      revision,
      // The workflow, run and step are in the id; the request says which attempt.
      request: { attempt },
      status,
      updatedAt: Date.now(),
    };
    return { op: 'compareAndSwapEffect', record, expectedRevision: revision === 0 ? null : revision - 1 };
  }

  /** Runs the body of `command`'s current attempt (or joins the run of it already going) and queues its outcome. */
  async runBody(exec, command) {
    // A commit that landed after this engine stopped (its tab no longer leads) starts nothing:
    // the next leader's engine runs the step.
    if (exec.dead || !this.#engine.mayStartBody(this.workflowId)) return;
    this.#bodies.add(command);
    const outcome = await this.#engine.bodies.run(command.key, command.attempt, command.body);
    if (exec.dead) return;
    exec.enqueue(this.#stepOutcome(exec, command, outcome));
  }

  /**
   * A step the history left open. Waiting for its next attempt: the retry timer is armed. Its
   * body running: the same body still running here is joined; otherwise that attempt may or
   * may not have done its work. A `once` step then fails with OUTCOME_UNKNOWN; any other runs
   * again, attempt + 1, under the same key, if its retry policy allows one more attempt. The
   * cut-off attempt counts, so a body that takes its engine down each time (a tab that crashes
   * on it) ends after `maxAttempts` like one that throws.
   */
  async #recoverStep(exec, command) {
    const record = await this.#engine.store.loadEffect(command.key);
    if (exec.dead) return;
    command.ledgerRevision = record?.revision ?? null;
    if (command.phase === 'waiting') return this.#armRetry(exec, command, command.retryAt);
    if (this.#engine.bodies.get(command.key)?.attempt === command.attempt) return this.runBody(exec, command);
    if (!command.options.once) {
      if (command.attempt < command.options.retry.maxAttempts) return exec.enqueue(this.#nextAttempt(exec, command, 'restart'));
      const error = new Error(`the engine stopped during attempt ${command.attempt}, the last the step's retry policy allows`);
      return exec.enqueue(this.#stepFailure(exec, command, error));
    }
    const error = {
      name: 'RunStoreError',
      code: 'OUTCOME_UNKNOWN',
      idempotencyKey: command.key,
      message: `step ${command.name} of workflow ${exec.workflowId} may or may not have run: the engine stopped during attempt ${command.attempt}, and the step is marked once`,
    };
    exec.enqueue({
      name: 'stepFailed',
      data: { n: command.n, attempts: command.attempt, error },
      ops: () => [this.ledger(exec, command, { type: 'outcomeUnknown' })],
    });
  }

  /**
   * The input that starts attempt `command.attempt + 1`, and runs it once recorded. `cause`:
   * `retry` after a failed attempt, `restart` after one its engine stopped during.
   */
  #nextAttempt(exec, command, cause) {
    const attempt = command.attempt + 1;
    return {
      name: 'stepAttempt',
      data: { n: command.n, attempt, cause },
      ops: () => [
        { op: 'cancelTimer', workflowId: exec.workflowId, timerId: `retry/${command.name}` },
        this.ledger(exec, command, { type: 'started' }, attempt),
      ],
      after: () => this.runBody(exec, command),
    };
  }

  /** The input that records a body's outcome: done, another attempt later, or failed. */
  #stepOutcome(exec, command, outcome) {
    if (!outcome.ok) return this.#stepFailure(exec, command, outcome.error);
    const { staged } = outcome;
    return {
      name: 'stepDone',
      data: { n: command.n, ...withValue('result', outcome.value) },
      ops: () => {
        this.#bodies.delete(command); // its outcome is being recorded
        return [this.ledger(exec, command, { type: 'completed', output: outcome.value ?? null }), ...staged];
      },
      // What the body staged commits with its result, or the attempt fails with the store's error.
      alone: staged.length > 0,
      refuse: staged.length > 0 ? (error) => this.#refused(exec, command, error) : null,
      after: (event) => this.#afterStep(exec, command, event),
    };
  }

  #refused(exec, command, error) {
    command.ledgerRevision -= 1;
    const input = this.#stepFailure(exec, command, error);
    return { event: custom(input.name, input.data, Date.now()), ops: input.ops() };
  }

  #stepFailure(exec, command, error) {
    const record = errorRecord(error);
    const { attempt } = command;
    const policy = command.options.retry;
    const fatal = isFatal(error) || (error?.code === 'INVALID_INPUT' && error.field === 'result');
    const failed = () => {
      this.#bodies.delete(command); // its outcome is being recorded
      return this.ledger(exec, command, { type: 'failed', error: record.message });
    };
    const after = (event) => this.#afterStep(exec, command, event);
    if (!fatal && !exec.cancelReason && attempt < policy.maxAttempts) {
      const retryAt = Date.now() + retryDelayMs(policy, attempt);
      const timer = { op: 'scheduleTimer', workflowId: exec.workflowId, timerId: `retry/${command.name}`, fireAt: retryAt };
      return { name: 'stepRetry', data: { n: command.n, attempt, error: record, retryAt }, ops: () => [failed(), timer], after };
    }
    return { name: 'stepFailed', data: { n: command.n, attempts: attempt, error: record }, ops: () => [failed()], after };
  }

  #afterStep(exec, command, event) {
    this.#bodies.delete(command);
    this.#engine.bodies.forget(command.key, command.attempt);
    if (event.name === 'stepRetry') this.#armRetry(exec, command, event.data.retryAt);
  }

  #armRetry(exec, command, retryAt) {
    if (exec.dead) return;
    command.cancelTimer = this.#at(retryAt, () => exec.enqueue(this.#nextAttempt(exec, command, 'retry')));
  }

  /** Arms the timer of a sleep or a wait's timeout: when due, its input goes to the run. */
  armTimer(exec, command) {
    if (exec.dead) return;
    const name = command.kind === 'sleep' ? 'timerFired' : 'waitTimedOut';
    const cancel = { op: 'cancelTimer', workflowId: exec.workflowId, timerId: command.timerId };
    command.cancelTimer = this.#at(command.fireAt, () => exec.enqueue({ name, data: { n: command.n }, ops: [cancel] }));
  }

  #at(time, fire) {
    const cancel = this.#engine.timers.at(time, () => {
      this.#timers.delete(cancel);
      fire();
    });
    this.#timers.add(cancel);
    return () => {
      this.#timers.delete(cancel);
      cancel();
    };
  }

  /** The operations that start a child: its journal's `started` and its visibility record. */
  childStart(exec, command, workflow, input) {
    const now = Date.now();
    const runId = crypto.randomUUID();
    const parent = { workflowId: exec.workflowId, runId: exec.runId, n: command.n, detached: command.detached };
    const started = {
      type: 'started',
      workflowType: workflow.name,
      runId,
      recordedAt: now,
      data: { ...withValue('input', input), origin: exec.origin ?? this.#engine.device, parent },
    };
    return [
      { op: 'append', workflowId: command.childId, events: [started], expectedSeq: 0 },
      { op: 'upsertVisibility', record: this.#engine.startRecord(command.childId, runId, workflow.name, now, started.data.origin) },
    ];
  }

  adopt(workflowId) {
    this.#engine.adopt(workflowId);
  }

  /** A cancelled or ended run's command: what it had going stops, with its store records. */
  stopCommand(exec, command, why) {
    if (command.kind === 'step') {
      this.#engine.bodies.abort(command.key);
      if (command.phase === 'waiting') exec.stage({ op: 'cancelTimer', workflowId: exec.workflowId, timerId: `retry/${command.name}` });
      return;
    }
    if (command.timerId && command.fireAt !== null && command.fireAt !== undefined) {
      exec.stage({ op: 'cancelTimer', workflowId: exec.workflowId, timerId: command.timerId });
    }
    if (command.kind === 'child' && !command.detached) exec.stage(this.#engine.cancelRow(command.childId, `its parent ${exec.workflowId} ${why}`, exec.runId));
  }

  /** What an open command leaves when its run ends: bodies may have run, timers go, attached children are cancelled. */
  abandon(exec, command) {
    this.stopCommand(exec, command, 'ended');
  }

  /** The end of a run as events and operations: `{ status, events, ops, ... }`. */
  outcomeOf(exec, ended) {
    const now = Date.now();
    const ops = [];
    // Bodies still running when the run ends may or may not finish their work.
    for (const command of this.#bodies) {
      if (command.ledgerRevision !== null && command.ledgerRevision !== undefined) {
        ops.push(this.ledger(exec, command, { type: 'outcomeUnknown' }));
      }
    }
    if (ended.kind === 'continued') {
      const next = { runId: crypto.randomUUID(), input: ended.input, startedAt: now };
      const data = { ...withValue('input', ended.input), origin: exec.origin, parent: exec.parent };
      const events = [
        { type: 'continuedAsNew', nextRunId: next.runId, recordedAt: now },
        { type: 'started', workflowType: exec.workflowType, runId: next.runId, recordedAt: now, data },
      ];
      return { status: 'continuedAsNew', events, ops, next };
    }
    if (ended.kind === 'returned') return this.#completed(exec, ended.value, now, ops);
    if (isCancellation(ended.error) && exec.cancelReason !== undefined) {
      const reason = exec.cancelReason;
      ops.push(...this.#toParent(exec, 'cancelled', { error: { name: 'RunStoreError', code: 'CANCELLED', message: reason ?? '' } }));
      return { status: 'cancelled', events: [{ type: 'cancelled', recordedAt: now, data: { reason } }], ops, closedAt: now, reason };
    }
    return this.#failed(exec, ended.error, now, ops);
  }

  #completed(exec, value, now, ops) {
    let result;
    try {
      result = asStored(value, 'result');
    } catch (error) {
      return this.#failed(exec, error, now, ops);
    }
    ops.push(...this.#toParent(exec, 'completed', withValue('result', result)));
    const events = [{ type: 'completed', recordedAt: now, data: withValue('result', result) }];
    return { status: 'completed', events, ops, closedAt: now };
  }

  #failed(exec, error, now, ops) {
    const record = errorRecord(error);
    const reason = record.message || record.name;
    ops.push(...this.#toParent(exec, 'failed', { error: record }));
    const events = [{ type: 'failed', reason, recordedAt: now, data: { error: record } }];
    return { status: 'failed', events, ops, closedAt: now, reason, failedStep: error?.step ?? null };
  }

  /** The inbox row that tells an awaiting parent how this run ended. */
  #toParent(exec, status, fields) {
    const parent = exec.parent;
    if (!parent || parent.detached) return [];
    const message = { kind: 'child', n: parent.n, runId: parent.runId, workflowId: exec.workflowId, status, ...fields };
    return [this.#engine.inboxInsert(parent.workflowId, `child/${exec.workflowId}/${exec.runId}`, message)];
  }

  /** The run ended (its end landed): a continued run goes on as the next one. */
  ended(exec, outcome) {
    if (this.exec !== exec) return;
    this.#bodies.clear();
    if (outcome.status === 'continuedAsNew') {
      const next = new Execution(this, {
        workflowId: this.workflowId,
        runId: outcome.next.runId,
        def: exec.def,
        input: outcome.next.input,
        startedAt: outcome.next.startedAt,
        head: exec.head,
        firstSeq: exec.head,
        origin: exec.origin,
        parent: exec.parent,
      });
      this.#run(next, []);
      return;
    }
    this.#end(`workflow ${this.workflowId} has ended`);
  }

  /** The run's record in the visibility index. */
  visibility(exec, { head, status, closed, stepsDone, step, waiting }) {
    const continued = closed?.status === 'continuedAsNew';
    return {
      workflowId: exec.workflowId,
      runId: continued ? closed.next.runId : exec.runId,
      workflowType: exec.workflowType,
      status: continued ? 'running' : status,
      startTime: continued ? closed.next.startedAt : exec.startedAt,
      // A run taken over from a device whose clock runs ahead closes no earlier than it started.
      closeTime: closed && !continued ? Math.max(closed.closedAt, exec.startedAt) : null,
      failedStep: closed?.failedStep ?? null,
      failureReason: exec.blocked?.message ?? closed?.reason ?? null,
      head,
      searchAttributes: {
        engine: 'runstore/workflow',
        origin: exec.origin,
        firstSeq: continued ? head : exec.firstSeq,
        steps: continued ? 0 : stepsDone,
        step: continued ? null : step,
        waiting: closed ? null : waiting,
      },
    };
  }

  /** The run no longer replays: it is shown as blocked, and left as it is. */
  blockedBy(exec, error) {
    this.state = 'blocked';
    this.#stopBodies();
    this.#engine.report(error, this.workflowId);
    const record = exec.visibility();
    this.#engine
      .write({ operations: [{ op: 'upsertVisibility', record }] })
      .catch((failure) => this.#engine.report(failure, this.workflowId))
      .finally(() => this.#settle());
  }

  /** A commit of the run failed: the execution ends, and the run is loaded again from the store. */
  failed(exec, error) {
    exec.dead = true;
    if (this.exec !== exec || this.state === 'stopped') return;
    this.exec = null;
    this.#feeding = false;
    // Bodies still running are joined by the next execution (StepBodies), not stopped.
    this.#bodies.clear();
    this.#retryLoad(error);
  }

  #retryLoad(error) {
    if (this.state === 'stopped') return;
    // Another engine's write (a run advanced elsewhere) is no fault: load it again at once.
    if (error?.code !== 'SEQUENCE_CONFLICT') this.#engine.report(error, this.workflowId);
    this.state = 'idle';
    this.#reloadDelay = Math.min(MAX_RELOAD_DELAY_MS, Math.max(100, this.#reloadDelay * 2));
    const delay = error?.code === 'SEQUENCE_CONFLICT' ? 0 : this.#reloadDelay;
    this.#at(Date.now() + delay, () => this.load());
  }
}
