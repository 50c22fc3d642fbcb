// A run's journal as the engine wrote it, read back for the page: what the workflow's code
// asked for (steps, sleeps, waits for a signal, children), in order, and how each went. The
// engine's events: `started`; commands `step`, `sleep`, `wait`, `child`, `value`, `patch`, each
// with its number `n`; inputs `stepDone`, `stepRetry` then `stepAttempt` (a failed attempt and
// the next), `stepFailed`, `timerFired`, `signal`, `waitTimedOut`, `childDone`,
// `cancelRequested`; and `completed`, `failed` or `cancelled`.

/** An event's name: the custom event's, else its type. */
export const eventName = (e) => (e.type === 'custom' ? e.name : e.type);

/**
 * Folds the events of a workflow's current run: `{ started, status, commands, notes }`.
 * `commands`: what the code asked for, by `n`, each `{ kind, name, status, attempt, ... }`.
 * `notes`: by event seq, what the timeline says of some events: `rerun` for a `stepAttempt`
 * that follows no failed attempt (the engine stopped while the body ran: a reload, a closed
 * tab; the next engine ran it again under the same key), `unknown` for a `stepFailed` of a
 * `once` step cut off that way (OUTCOME_UNKNOWN).
 */
export function foldRun(events) {
  let run = null;
  for (const e of events) {
    const name = eventName(e);
    if (name === 'started') {
      run = { started: e, status: 'running', commands: new Map(), notes: new Map(), buffered: new Map(), result: null, error: null };
      continue;
    }
    if (run) apply(run, name, e);
  }
  return run;
}

function apply(run, name, e) {
  const d = e.data ?? {};
  const command = run.commands.get(d.n);
  const note = (flags) => run.notes.set(e.seq, flags);
  switch (name) {
    case 'step':
      return add(run, e, 'step', d.step, { attempt: d.attempt, retries: 0, reruns: [] });
    case 'sleep':
      return add(run, e, 'sleep', d.timer, { fireAt: d.fireAt });
    case 'wait': {
      const waiting = add(run, e, 'wait', d.signal, { timeoutAt: d.timeoutAt ?? null });
      const early = run.buffered.get(d.signal)?.shift();
      if (early) Object.assign(waiting, { status: 'done', payload: early.payload });
      return;
    }
    case 'child':
      return add(run, e, 'child', d.workflowId, { workflowType: d.workflowType });
    case 'stepDone':
      Object.assign(command, { status: 'done', result: d.result, at: e.recordedAt });
      return;
    case 'stepRetry':
      Object.assign(command, { status: 'retrying', retryAt: d.retryAt, error: d.error, retries: command.retries + 1 });
      return;
    case 'stepAttempt': {
      const rerun = command.status !== 'retrying';
      if (rerun) command.reruns.push({ attempt: d.attempt, at: e.recordedAt });
      Object.assign(command, { status: 'running', attempt: d.attempt });
      return note({ rerun });
    }
    case 'stepFailed': {
      const unknown = d.error?.code === 'OUTCOME_UNKNOWN';
      Object.assign(command, { status: unknown ? 'outcomeUnknown' : 'failed', error: d.error, attempt: d.attempts, at: e.recordedAt });
      return note({ unknown });
    }
    case 'timerFired':
    case 'waitTimedOut':
      Object.assign(command, { status: name === 'timerFired' ? 'done' : 'timedOut', at: e.recordedAt });
      return;
    case 'signal': {
      // To the oldest wait for it, else kept for the next wait (as the engine does).
      const waiting = [...run.commands.values()].find((c) => c.kind === 'wait' && c.name === d.signal && c.status === 'waiting');
      if (waiting) Object.assign(waiting, { status: 'done', payload: d.payload, at: e.recordedAt });
      else run.buffered.set(d.signal, [...(run.buffered.get(d.signal) ?? []), d]);
      return;
    }
    case 'childDone':
      Object.assign(command, { status: d.status === 'completed' ? 'done' : d.status, result: d.result });
      return;
    case 'completed':
      return Object.assign(run, { status: 'completed', result: d.result });
    case 'failed':
      return Object.assign(run, { status: 'failed', error: d.error ?? { message: e.reason } });
    case 'cancelled':
      return Object.assign(run, { status: 'cancelled' });
    default:
  }
}

function add(run, e, kind, name, fields) {
  const status = kind === 'step' ? 'running' : 'waiting';
  run.commands.set(e.data.n, { n: e.data.n, kind, name, status, since: e.recordedAt, ...fields });
}

const startedEvents = new Map();

/** The `started` event of a workflow (read once: it never changes), or null before there is one. */
export async function startedOf(store, workflowId) {
  if (!startedEvents.has(workflowId)) {
    const [first] = (await store.readHistory(workflowId, { limit: 1 })).items;
    if (!first) return null;
    startedEvents.set(workflowId, first);
  }
  return startedEvents.get(workflowId);
}

/**
 * Whether this device's engine runs the workflow: one started here, not pulled from a sync
 * server after another device started it (the engine's origin rule: `origin` in `started`).
 */
export const runsHere = (engine, started) => (started.data?.origin ?? null) === null || started.data.origin === engine.device;
