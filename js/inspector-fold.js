// A run's journal as runstore/workflow wrote it, folded into what its code asked for: each
// command (`step`, `sleep`, `wait`, `child`, numbered `n` in the run) with how it went and
// when, as spans on a time line. The engine's events: `started`; the commands `step`, `sleep`,
// `wait`, `child`, `value`, `patch`; the inputs `stepDone`, `stepRetry` (a failed attempt,
// the next one due at `retryAt`), `stepAttempt` (attempt `attempt` began, `cause` `retry` or
// `restart`: the engine stopped while the body ran), `stepFailed`, `timerFired`, `signal`,
// `waitTimedOut`, `childDone`, `cancelRequested`; and `completed`, `failed`, `cancelled` or
// `continuedAsNew`. Events of other writers are kept in the list as they are.

/** An event's name: the custom event's own, else its lifecycle type. */
export const eventName = (e) => (e.type === 'custom' ? e.name : e.type);

/** The events of the last run in `events` (after its `started`), and its `started` event. */
function lastRun(events) {
  let from = -1;
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i].type === 'started') {
      from = i;
      break;
    }
  }
  return from < 0 ? { started: null, events: [] } : { started: events[from], events: events.slice(from + 1) };
}

/**
 * The last run of a workflow's events: `{ started, status, commands, notes, result, error,
 * start, end }`, or null before a `started`. `commands` by `n`: `{ kind, name, status, since,
 * at, attempt, segments }`, `segments` the spans of a step's attempts and waits for a retry.
 * `notes` by event seq: `{ rerun }` for an attempt begun because the engine stopped while the
 * one before ran, `{ unknown }` for a `once` step failed with OUTCOME_UNKNOWN.
 */
export function foldRun(events) {
  const { started, events: rest } = lastRun(events);
  if (!started) return null;
  const run = {
    started,
    status: 'running',
    commands: new Map(),
    notes: new Map(),
    buffered: new Map(),
    result: undefined,
    error: null,
    start: started.recordedAt,
    end: null,
  };
  for (const e of rest) apply(run, eventName(e), e);
  run.lastSeq = rest.at(-1)?.seq ?? started.seq;
  return run;
}

function apply(run, name, e) {
  const d = e.data && typeof e.data === 'object' ? e.data : {};
  const command = run.commands.get(d.n);
  const at = e.recordedAt;
  switch (name) {
    case 'step':
      return add(run, e, 'step', d.step, { attempt: d.attempt ?? 1, retries: 0, restarts: 0, segments: [{ kind: 'attempt', attempt: d.attempt ?? 1, start: at, end: null }] });
    case 'sleep':
      return add(run, e, 'sleep', d.timer, { fireAt: d.fireAt });
    case 'wait': {
      const waiting = add(run, e, 'wait', d.signal, { timeoutAt: d.timeoutAt ?? null });
      const early = run.buffered.get(d.signal)?.shift();
      if (early) Object.assign(waiting, { status: 'done', payload: early.payload, at });
      return undefined;
    }
    case 'child':
      return add(run, e, 'child', d.workflowId, { workflowType: d.workflowType, childId: d.workflowId });
    case 'stepDone':
      if (!command) return undefined;
      close(command, at, 'done');
      return Object.assign(command, { status: 'done', result: d.result, at });
    case 'stepRetry':
      if (!command) return undefined;
      close(command, at, 'failed');
      command.segments.push({ kind: 'backoff', attempt: (d.attempt ?? command.attempt) + 1, start: at, end: null, until: d.retryAt });
      return Object.assign(command, { status: 'retrying', retryAt: d.retryAt, error: d.error, retries: command.retries + 1 });
    case 'stepAttempt': {
      if (!command) return undefined;
      // `cause` says why; a journal from before it had one: an attempt after no retry wait.
      const rerun = d.cause ? d.cause === 'restart' : command.status !== 'retrying';
      close(command, at, rerun ? 'cut off' : null);
      command.segments.push({ kind: 'attempt', attempt: d.attempt, start: at, end: null });
      if (rerun) command.restarts += 1;
      Object.assign(command, { status: 'running', attempt: d.attempt });
      return run.notes.set(e.seq, { rerun });
    }
    case 'stepFailed': {
      if (!command) return undefined;
      const unknown = d.error?.code === 'OUTCOME_UNKNOWN';
      close(command, at, unknown ? 'unknown' : 'failed');
      Object.assign(command, { status: unknown ? 'outcomeUnknown' : 'failed', error: d.error, attempt: d.attempts ?? command.attempt, at });
      return run.notes.set(e.seq, { unknown });
    }
    case 'timerFired':
    case 'waitTimedOut':
      if (!command) return undefined;
      return Object.assign(command, { status: name === 'timerFired' ? 'done' : 'timedOut', at });
    case 'signal': {
      // To the oldest wait for it, else kept for the next wait (as the engine does).
      const waiting = [...run.commands.values()].find((c) => c.kind === 'wait' && c.name === d.signal && c.status === 'waiting');
      if (waiting) Object.assign(waiting, { status: 'done', payload: d.payload, at, signalId: d.signalId });
      else run.buffered.set(d.signal, [...(run.buffered.get(d.signal) ?? []), d]);
      return undefined;
    }
    case 'childDone':
      if (!command) return undefined;
      return Object.assign(command, { status: d.status === 'completed' ? 'done' : (d.status ?? 'done'), result: d.result, at });
    case 'cancelRequested':
      return Object.assign(run, { cancelRequestedAt: at });
    case 'completed':
      return Object.assign(run, { status: 'completed', result: d.result, end: at });
    case 'failed':
      return Object.assign(run, { status: 'failed', error: d.error ?? { message: e.reason }, end: at });
    case 'cancelled':
      return Object.assign(run, { status: 'cancelled', end: at });
    case 'continuedAsNew':
      return Object.assign(run, { status: 'continuedAsNew', end: at });
    default:
      return undefined;
  }
}

function add(run, e, kind, name, fields) {
  const command = { n: e.data.n, kind, name: String(name ?? '?'), status: kind === 'step' ? 'running' : 'waiting', since: e.recordedAt, at: null, ...fields };
  run.commands.set(e.data.n, command);
  return command;
}

/** Ends a step's open segment at `at`; `outcome` says how its attempt ended. */
function close(command, at, outcome) {
  const open = command.segments?.at(-1);
  if (!open || open.end !== null) return;
  open.end = at;
  if (outcome) open.outcome = outcome;
}

/** Where the engine keeps a step's effect record: its idempotency key. */
export const effectKey = (workflowId, runId, step) => `${workflowId}/${runId}/${step}`;
