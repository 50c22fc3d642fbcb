// What a workflow's function is given: `ctx`, whose every method is a command of its run
// (workflow-execution.js), recorded once and replayed.
import { RunStoreError } from './errors.js';
import { checkMillis, checkName, invalid, isDefinition, stepOptions } from './workflow-define.js';
import { asStored } from './workflow-events.js';

/** What the code gets from a command that will never settle (a dead or ended execution). */
export const never = new Promise(() => {});

/**
 * What the workflow's code calls: every method is a command, recorded once and replayed.
 * Anything else the code does must give the same answers on every replay (no Date.now(), no
 * Math.random(), no I/O outside steps).
 */
export class WorkflowContext {
  #run;

  constructor(run) {
    this.#run = run;
  }

  get workflowId() {
    return this.#run.workflowId;
  }

  get runId() {
    return this.#run.runId;
  }

  get workflowType() {
    return this.#run.workflowType;
  }

  /** Whether the code is being replayed from the history (to keep logs from repeating). */
  get isReplaying() {
    return this.#run.replaying;
  }

  /** Whether the run was asked to cancel. */
  get cancelled() {
    return this.#run.cancelReason !== undefined;
  }

  /**
   * Runs `body({ idempotencyKey, attempt, signal, write })` once and records its result. On
   * replay the recorded result comes back and the body does not run.
   */
  step(name, body, options) {
    checkName(name, 'step name');
    if (typeof body !== 'function') throw invalid(`step ${name}: its body must be a function`, 'body');
    const opts = stepOptions(options);
    const run = this.#run;
    if (!run.issuing) return never;
    const id = run.occurrence('step', name);
    const { command, event } = run.issue('step', id, () => ({ step: id, attempt: 1 }));
    Object.assign(command, { body, options: opts, stepName: name, key: `${run.workflowId}/${run.runId}/${id}` });
    command.attempt = event?.data.attempt ?? 1;
    command.phase = 'running';
    if (!event && run.issuing) run.stepStarted(command);
    return command.promise;
  }

  /** Sleeps `ms` milliseconds on a durable timer: it fires after a reload or a closed browser. */
  sleep(name, ms) {
    checkMillis(ms, 'ms');
    return this.#sleep(name, (now) => now + ms);
  }

  /** Sleeps until `time` (milliseconds since the epoch) on a durable timer. */
  sleepUntil(name, time) {
    checkMillis(time, 'time');
    return this.#sleep(name, () => time);
  }

  #sleep(name, fireAt) {
    checkName(name, 'timer name');
    const run = this.#run;
    if (!run.issuing) return never;
    const id = run.occurrence('sleep', name);
    let at = null;
    const { command, event } = run.issue('sleep', id, (now) => ({ timer: id, fireAt: (at = fireAt(now)) }));
    command.timerId = `sleep/${id}`;
    command.fireAt = event?.data.fireAt ?? at;
    if (!event && run.issuing) run.timerStarted(command);
    return command.promise;
  }

  /**
   * Waits for signal `name`; resolves to its payload, or to undefined after `timeoutMs`. A
   * signal that came before the wait is kept for it.
   */
  waitForSignal(name, options = {}) {
    checkName(name, 'signal name');
    const timeoutMs = options?.timeoutMs ?? null;
    if (timeoutMs !== null) checkMillis(timeoutMs, 'timeoutMs');
    const run = this.#run;
    if (!run.issuing) return never;
    const waitId = run.occurrence('wait', name);
    const buffered = run.takeBuffered(name);
    let timeoutAt = null;
    const { command, event } = run.issue('wait', name, (now) => {
      if (buffered || timeoutMs === null) return { signal: name };
      timeoutAt = now + timeoutMs;
      return { signal: name, timeoutAt };
    });
    if (buffered) {
      run.settle(command, null, buffered.payload);
      return command.promise;
    }
    run.addWaiter(name, command);
    command.fireAt = event ? (event.data.timeoutAt ?? null) : timeoutAt;
    if (command.fireAt !== null) {
      command.timerId = `signal/${waitId}`;
      if (!event && run.issuing) run.timerStarted(command);
    }
    return command.promise;
  }

  /** Starts a child workflow and resolves to its result (rejects as it fails or is cancelled). */
  child(workflow, options) {
    return this.#child(workflow, options, false);
  }

  /** Starts a child workflow that runs on its own; resolves to `{ workflowId }` once it started. */
  startChild(workflow, options) {
    return this.#child(workflow, options, true);
  }

  #child(workflow, options = {}, detached) {
    if (!isDefinition(workflow)) throw invalid('child: the workflow must be what defineWorkflow returned', 'workflow');
    const run = this.#run;
    if (!run.issuing) return never;
    const id = options?.id ?? `${run.workflowId}/${run.occurrence('child', workflow.name)}`;
    checkName(id, 'options.id');
    const input = asStored(options?.input, 'options.input');
    const name = `${workflow.name} ${id}`;
    const { command, event } = run.issue('child', name, () => ({ workflowId: id, workflowType: workflow.name, detached }));
    Object.assign(command, { childId: id, detached });
    if (event?.data.refused) {
      run.settle(command, new RunStoreError(event.data.refused.code, event.data.refused.message, { workflowId: id }));
    } else if (event) {
      if (detached) run.settle(command, null, { workflowId: id });
    } else if (run.issuing) {
      run.childStarted(command, workflow, input);
    }
    return command.promise;
  }

  /** Ends this run and starts the next one of the same workflow with `input`, on a fresh history. */
  continueAsNew(input) {
    const run = this.#run;
    if (run.issuing) run.continueAsNew(asStored(input, 'input'));
    return never;
  }

  /** The time, recorded: a replay gets the same number. */
  now() {
    return this.#value('now', () => Date.now());
  }

  /** A random number in [0, 1), recorded. */
  random() {
    return this.#value('random', () => Math.random());
  }

  /** A random UUID, recorded. */
  uuid() {
    return this.#value('uuid', () => crypto.randomUUID());
  }

  #value(kind, make) {
    const run = this.#run;
    if (!run.issuing) return make();
    let value;
    const { command, event } = run.issue('value', kind, () => ({ kind, value: (value = make()) }));
    if (event) value = event.data.value;
    run.settle(command, null, value);
    return value;
  }

  /**
   * Whether this run takes the code path of change `id`: true for runs that reach this point
   * with code that has it, false for runs that passed this point before it existed.
   */
  patched(id) {
    checkName(id, 'patch id');
    const run = this.#run;
    if (!run.issuing) return true;
    const { command } = run.issue('patch', id, () => ({ patch: id }));
    if (!command) return false;
    run.settle(command, null, true);
    return true;
  }
}

