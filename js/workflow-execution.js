// One run of a workflow, in memory: its code running on a `ctx` whose every call is a command,
// replayed from the run's history and then run live.
//
// Replay: the code runs from the top. Each command it issues is matched with the next command
// of the history (same kind, same name, else NON_DETERMINISM); each recorded input is handed
// to the command it settles, in the recorded order, one at a time, each followed by a task so
// that the code reacts to it before the next (nextTask). Recorded values (ctx.now, random,
// uuid) are given back as recorded.
//
// Live: inputs (a step's outcome, a timer, a signal, a child's end, a cancellation) queue up;
// the pump hands them over one at a time in the same way, collects the commands the code then
// issues, and records all of it, inputs and commands, in one commit of the store (the journal
// under the expected head, the effect ledger, timers, consumed inbox rows, visibility). Only
// after that commit does anything the commands ask for start: a step's body, a timer. So a
// replay sees exactly what the live run saw, in the same order.
import { RunStoreError } from './errors.js';
import { cancellation, COMMANDS, commandName, custom, stepFailure } from './workflow-events.js';
import { nextTask, serially } from './workflow-task.js';
import { Batch } from './workflow-batch.js';
import { WorkflowContext } from './workflow-context.js';

/**
 * How long a running run's visibility record may lag: a run of quick steps writes it with the
 * commit that is due, and one that went quiet with a commit of its own at most this late.
 */
const VISIBILITY_EVERY_MS = 200;

export class Execution {
  /** Set when the execution must not write again: replaced, ended, blocked or stopped. */
  dead = false;
  replaying = true;
  /** The reason given when the run was asked to cancel; undefined until it is. */
  cancelReason = undefined;
  /** The NON_DETERMINISM error that stopped the run, if one did. */
  blocked = null;

  #host;
  #ctx;
  /** The command events of the history, in order, and how many the code has matched. */
  #recorded = [];
  #matched = 0;
  #nextN = 0;
  /** Commands by number, and the ones not settled yet. */
  #commands = new Map();
  #open = new Set();
  /** How often each kind and name was issued (a step called twice is `name` then `name#2`). */
  #occurrences = new Map();
  /** Signals that came before anyone waited for them, and the waits, by signal name. */
  #buffered = new Map();
  #waiters = new Map();
  #queue = [];
  #batch;
  /** How the code ended: `{ kind: 'returned' | 'threw' | 'continued', ... }`, once it did. */
  #ended = null;
  #closed = false;
  #stepsDone = 0;
  #lastStep = null;
  /** What the last visibility record written said, and whether a later write is due. */
  #shown = null;
  #showLater = false;
  #trailing = null;

  /**
   * @param host the run's driver (workflow-run.js): the store, the engine's timers and step
   *   bodies, and what to do when the run ends or must be loaded again
   * @param run `{ workflowId, runId, def, input, started, head, firstSeq, origin, parent }`
   */
  constructor(host, run) {
    this.#host = host;
    Object.assign(this, run);
    this.#batch = new Batch(this);
    this.#ctx = new WorkflowContext(this);
  }

  /** The workflow's type. */
  get workflowType() {
    return this.def.name;
  }

  /**
   * Runs the code over `history` (the run's events after its `started`); resolves when every
   * recorded input was handed over, and the execution is live or has stopped.
   */
  async replay(history) {
    for (const event of history) if (COMMANDS.has(event.name)) this.#recorded.push(event);
    this.#nextN = this.#recorded.reduce((n, event) => Math.max(n, event.data.n + 1), 0);
    this.#begin();
    await nextTask();
    let commands = 0;
    for (const event of history) {
      if (this.dead) return;
      if (COMMANDS.has(event.name)) {
        commands++;
        continue;
      }
      // Every command recorded before this input was issued before it was handed over.
      this.#skipPatches(commands);
      if (this.#matched < commands) {
        return this.#diverged(`the history has ${describe(this.#recorded[this.#matched])} where the code is waiting`);
      }
      if (this.#ended) return this.#diverged(`the code ended where the history goes on with ${describe(event)}`);
      this.#apply(event.name, event.data, false);
      if (this.dead) return;
      await nextTask();
    }
    if (this.dead) return;
    this.#skipPatches(this.#recorded.length);
    if (this.#matched < this.#recorded.length) {
      return this.#diverged(`the history has ${describe(this.#recorded[this.#matched])} that the code did not ask for`);
    }
    this.replaying = false;
    // Commands the history left open carry on; new ones start once their events land.
    for (const command of [...this.#open].sort((a, b) => a.n - b.n)) if (command.recorded) this.#host.resume(this, command);
    this.#pump();
  }

  /** Passes the patch markers up to command `end` that the code no longer checks for. */
  #skipPatches(end) {
    while (this.#matched < end && this.#recorded[this.#matched].name === 'patch') this.#matched++;
  }

  /**
   * Queues an input for the live run: `{ name, data, ops, after, alone, refuse }`; `ops` (or a
   * function that makes them when the input is recorded) commit with it.
   */
  enqueue(input) {
    if (this.dead) return;
    this.#queue.push(input);
    this.#kick();
  }

  /** A command by its number. */
  command(n) {
    return this.#commands.get(n);
  }

  #begin() {
    Promise.resolve()
      .then(() => this.def.run(this.#ctx, this.input))
      .then(
        (value) => {
          this.#ended ??= { kind: 'returned', value };
          this.#kick();
        },
        (error) => {
          this.#ended ??= { kind: 'threw', error };
          this.#kick();
        },
      );
  }

  // ----- commands -----

  /**
   * Issues a command of `kind` named `name`: matched with the history when it has one there
   * (returns that event), else recorded in the next commit with `data` (returns null). A
   * mismatch stops the run.
   */
  issue(kind, name, data) {
    const command = this.#newCommand(kind, name);
    while (this.#matched < this.#recorded.length) {
      const event = this.#recorded[this.#matched];
      if (event.name === 'patch' && kind !== 'patch') {
        this.#matched++; // a patch the code no longer checks for
        continue;
      }
      if (event.name === kind && commandName(kind, event.data) === name) {
        this.#matched++;
        command.recorded = true;
        this.#bind(command, event.data.n);
        return { command, event };
      }
      if (kind === 'patch') return { command: null, event: null };
      this.#diverged(`the code asks for ${kind} ${name} where the history has ${describe(event)}`);
      return { command, event: null };
    }
    this.#bind(command, this.#nextN++);
    const now = Date.now();
    this.#batch.add(custom(kind, { n: command.n, ...data(now) }, now));
    this.#kick();
    return { command, event: null };
  }

  /** The next occurrence name of `name` for `kind`: `name`, `name#2`, ... */
  occurrence(kind, name) {
    const key = `${kind} ${name}`;
    const count = (this.#occurrences.get(key) ?? 0) + 1;
    this.#occurrences.set(key, count);
    return count === 1 ? name : `${name}#${count}`;
  }

  #newCommand(kind, name) {
    const command = { kind, name, n: -1, settled: false };
    command.promise = new Promise((resolve, reject) => {
      command.resolve = resolve;
      command.reject = reject;
    });
    // A command the code never awaits (a step left running, a race's loser) must not end
    // the process with an unhandled rejection; the code's own await still gets it.
    command.promise.catch(() => {});
    return command;
  }

  #bind(command, n) {
    command.n = n;
    this.#commands.set(n, command);
    this.#open.add(command);
  }

  /** Settles `command` once: later outcomes of it (after a cancellation) change nothing. */
  settle(command, error, value) {
    if (command.settled) return;
    command.settled = true;
    this.#open.delete(command);
    command.cancelTimer?.();
    if (error) command.reject(error);
    else command.resolve(value);
  }

  /** Whether the run may issue commands now. */
  get issuing() {
    return !this.dead && !this.#ended && !this.blocked;
  }

  /** Adds to the next commit: operations that go with the last event added. */
  stage(...operations) {
    this.#batch.stage(operations);
  }

  /** Runs `action` once the next commit has landed. */
  afterCommit(action) {
    this.#batch.after(action);
  }

  /** Commits one step of the store for this run. */
  commitStep(step) {
    return this.#host.commit(this, step);
  }

  /** A new step's first attempt: its ledger record goes with its event; its body runs once both landed. */
  stepStarted(command) {
    this.stage(this.#host.ledger(this, command, { type: 'started' }));
    this.afterCommit(() => this.#host.runBody(this, command));
  }

  /** A new timer (a sleep, a wait's timeout): stored with its event, armed once both landed. */
  timerStarted(command) {
    this.stage({ op: 'scheduleTimer', workflowId: this.workflowId, timerId: command.timerId, fireAt: command.fireAt });
    this.afterCommit(() => this.#host.armTimer(this, command));
  }

  /**
   * A new child: its journal starts in the parent's commit. An id that is taken refuses the
   * start, and the parent's command rejects with the store's error instead.
   */
  childStarted(command, workflow, input) {
    this.stage(...this.#host.childStart(this, command, workflow, input));
    let refusal = null;
    this.#batch.refusable((error, { event }) => {
      if (error.code !== 'SEQUENCE_CONFLICT' && error.code !== 'CONFLICT') return null;
      refusal = { code: 'CONFLICT', message: `workflow id ${command.childId} is taken` };
      return { event: custom('child', { ...event.data, refused: refusal }, event.recordedAt), ops: [] };
    });
    this.afterCommit(() => {
      if (refusal) return this.settle(command, new RunStoreError(refusal.code, refusal.message, { workflowId: command.childId }));
      if (command.detached) this.settle(command, null, { workflowId: command.childId });
      this.#host.adopt(command.childId);
    });
  }

  // ----- inputs -----

  /** Hands an input to the code. `live`: it is being recorded now (operations may go with it). */
  #apply(name, data, live) {
    if (name === 'signal') return this.#signal(data.signal, data.payload, live);
    if (name === 'cancelRequested') return this.#cancel(data.reason ?? null, live);
    const command = this.#commands.get(data.n);
    if (!command) return this.#diverged(`the history has ${name} of command ${data.n}, which the code did not ask for`);
    switch (name) {
      case 'stepDone':
        this.#stepsDone++;
        this.#lastStep = command.name;
        return this.settle(command, null, data.result);
      case 'stepFailed':
        this.#lastStep = command.name;
        return this.settle(command, stepFailure(command.name, data.attempts, data.error));
      case 'stepRetry':
        Object.assign(command, { attempt: data.attempt, phase: 'waiting', retryAt: data.retryAt });
        return;
      case 'stepAttempt':
        Object.assign(command, { attempt: data.attempt, phase: 'running' });
        return;
      case 'timerFired':
        return this.settle(command, null, undefined);
      case 'waitTimedOut':
        this.#waiters.set(command.name, (this.#waiters.get(command.name) ?? []).filter((c) => c !== command));
        return this.settle(command, null, undefined);
      case 'childDone':
        return this.settle(command, childError(command, data), data.result);
      default:
        return this.#diverged(`the history has an event ${name} this engine does not know`);
    }
  }

  /** A signal: to the oldest wait for it, else kept for the next wait. */
  #signal(name, payload, live) {
    const waiters = this.#waiters.get(name) ?? [];
    const waiter = waiters.shift();
    if (!waiter) {
      this.#buffered.set(name, [...(this.#buffered.get(name) ?? []), payload]);
      return;
    }
    if (live && waiter.timerId) this.stage({ op: 'cancelTimer', workflowId: this.workflowId, timerId: waiter.timerId });
    this.settle(waiter, null, payload);
  }

  /** Takes the oldest signal `name` that came before a wait for it (`{ payload }`), or null. */
  takeBuffered(name) {
    const buffered = this.#buffered.get(name);
    if (!buffered?.length) return null;
    return { payload: buffered.shift() };
  }

  /** Adds a wait for signal `name`. */
  addWaiter(name, command) {
    this.#waiters.set(name, [...(this.#waiters.get(name) ?? []), command]);
  }

  /**
   * The run was asked to cancel: every command it waits on throws CANCELLED (at the code's next
   * await), and what they had going stops. The code may go on (cleanup steps) or let it end the run.
   */
  #cancel(reason, live) {
    if (this.cancelReason !== undefined) return;
    this.cancelReason = reason;
    const error = cancellation(this.workflowId, reason);
    for (const command of [...this.#open]) {
      if (command.kind === 'child' && command.detached) continue;
      if (live) this.#host.stopCommand(this, command, 'was cancelled');
      this.settle(command, error);
    }
    this.#waiters.clear();
  }

  // ----- the live loop -----

  /** Has the pump look again: something may be waiting to be recorded. */
  #kick() {
    if (this.replaying || this.dead) return;
    queueMicrotask(this.#pump);
  }

  /** Records what waits to be recorded, one turn at a time. */
  #pump = serially(async () => {
    if (this.dead || this.replaying || this.blocked) return;
    try {
      await this.#drainQueue();
    } catch (error) {
      this.#host.failed(this, error);
    }
  });

  async #drainQueue() {
    while (!this.dead && (this.#queue.length > 0 || !this.#batch.empty || (this.#ended && !this.#closed) || this.#showLater)) {
      const alone = this.#queue[0]?.alone;
      if (alone && !this.#batch.empty) {
        if (!(await this.#commit())) return;
        continue;
      }
      const inputs = alone ? this.#queue.splice(0, 1) : this.#takeInputs();
      for (const input of inputs) {
        const entry = this.#batch.add(custom(input.name, input.data, Date.now()));
        const ops = typeof input.ops === 'function' ? input.ops() : input.ops;
        if (ops?.length) this.#batch.stage(ops);
        if (input.refuse) this.#batch.refusable(input.refuse);
        if (input.after) this.#batch.after(() => input.after(entry.event));
        // Committed before the code sees it: what went with it may be refused, and the
        // code then gets what replaced it.
        if (alone && !(await this.#commit())) return;
        this.#apply(entry.event.name, entry.event.data, true);
        await nextTask();
        if (this.dead) return;
      }
      if (this.blocked) return;
      if (this.#ended && !this.#closed) this.#close();
      if (!(await this.#commit())) return;
    }
  }

  /** The queued inputs up to the first that must be committed alone. */
  #takeInputs() {
    const end = this.#queue.findIndex((input) => input.alone);
    return this.#queue.splice(0, end === -1 ? this.#queue.length : end);
  }

  /**
   * Commits what the batch holds; resolves to whether it landed. A refused part (a child's id
   * that is taken, a step's own operation) is taken out and the rest committed again; any
   * other failure hands the run to its driver, which loads it again from the store.
   */
  async #commit() {
    if (this.#batch.empty) return this.#showLater ? this.#commitVisibility() : true;
    const batch = this.#batch;
    this.#batch = new Batch(this);
    for (;;) {
      try {
        this.head = await batch.commit(this.head, (head) => this.#visibilityDue(head));
        break;
      } catch (error) {
        if (!this.dead && batch.refuse(error)) continue;
        if (!this.dead) this.#host.failed(this, error);
        return false;
      }
    }
    batch.landed();
    this.#host.landed(this);
    return true;
  }

  /**
   * The run's visibility record as of `head` when a list would show something new (another
   * status, run or kind of wait) or the one written is VISIBILITY_EVERY_MS old; else null, with
   * a write of its own armed for when it is.
   */
  #visibilityDue(head) {
    const record = this.visibility(head);
    const kind = record.searchAttributes.waiting?.split(' ')[0] ?? null;
    const shown = this.#shown;
    const now = Date.now();
    const same = shown && shown.status === record.status && shown.runId === record.runId && shown.kind === kind;
    if (same && record.status === 'running' && now - shown.at < VISIBILITY_EVERY_MS) {
      this.#trailing ??= this.#host.later(shown.at + VISIBILITY_EVERY_MS, () => {
        this.#trailing = null;
        this.#showLater = true;
        this.#kick();
      });
      return null;
    }
    this.#shown = { status: record.status, runId: record.runId, kind, at: now };
    this.#showLater = false;
    return record;
  }

  /** Writes the visibility record a quiet run owes (its last commits left it out). */
  async #commitVisibility() {
    this.#showLater = false;
    const record = this.#visibilityDue(this.head) ?? this.visibility();
    try {
      await this.#host.commit(this, { operations: [{ op: 'upsertVisibility', record }] });
    } catch (error) {
      // CONFLICT: a later record is there (this run's own, written meanwhile).
      if (error?.code !== 'CONFLICT') {
        this.#host.failed(this, error);
        return false;
      }
    }
    return true;
  }

  /** The run's record in the visibility index, as of `head`. */
  visibility(head = this.head) {
    const closed = this.#closed ? this.#outcome : null;
    return this.#host.visibility(this, {
      head,
      status: this.blocked ? 'blocked' : (closed?.status ?? 'running'),
      closed,
      stepsDone: this.#stepsDone,
      step: this.#lastStep,
      waiting: this.#waitingOn(),
    });
  }

  #waitingOn() {
    const first = [...this.#open].sort((a, b) => a.n - b.n)[0];
    return first ? `${first.kind} ${first.name}` : null;
  }

  // ----- ending -----

  /** Stops the run on a divergence from its history (NON_DETERMINISM); nothing more is written. */
  #diverged(detail) {
    if (this.blocked || this.dead) return;
    this.blocked = new RunStoreError(
      'NON_DETERMINISM',
      `workflow ${this.workflowId} (${this.workflowType}) no longer replays: ${detail}`,
      { workflowId: this.workflowId, runId: this.runId },
    );
    this.dead = true;
    this.#host.blockedBy(this, this.blocked);
  }

  /** Ends the code with `continueAsNew(input)`. */
  continueAsNew(input) {
    if (this.replaying && this.#matched < this.#recorded.length) {
      this.#diverged('the code continues as new where the history goes on');
      return;
    }
    this.#ended ??= { kind: 'continued', input };
    this.#kick();
  }

  #outcome = null;

  /** Adds the run's end to the batch: its lifecycle events, and what its open commands leave. */
  #close() {
    this.#closed = true;
    const outcome = this.#host.outcomeOf(this, this.#ended);
    this.#outcome = outcome;
    this.#batch.add(...outcome.events);
    this.stage(...outcome.ops);
    for (const command of [...this.#open]) this.#host.abandon(this, command);
    this.afterCommit(() => {
      this.dead = true;
      this.#host.ended(this, outcome);
    });
  }
}

/** What an awaited child's end throws into its parent, or null when it completed. */
function childError(command, data) {
  if (data.status === 'completed') return null;
  if (data.status === 'refused') return new RunStoreError(data.error.code, data.error.message, { workflowId: command.childId });
  if (data.status === 'cancelled') return cancellation(command.childId, data.error?.message ?? null);
  return new RunStoreError('WORKFLOW_FAILED', `child workflow ${command.childId} failed: ${data.error?.message ?? ''}`, {
    workflowId: command.childId,
    cause: data.error ?? null,
  });
}

function describe(event) {
  return `${event.name} ${commandName(event.name, event.data ?? {}) || ''}`.trim();
}
