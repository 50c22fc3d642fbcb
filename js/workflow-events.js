// The journal events of a workflow run, as the engine writes and replays them. A run's history
// is its `started` event and then custom events of two kinds:
// - commands, which the workflow's code issued, each with its number `n` in the run:
//   `step` (attempt 1 of a step began), `sleep`, `wait` (for a signal), `child`, `value`
//   (what ctx.now, random or uuid returned), `patch`;
// - inputs, which settle commands or bring news: `stepDone`, `stepFailed`, `stepRetry` and
//   `stepAttempt` (a failed attempt and the next one), `timerFired`, `signal`, `waitTimedOut`,
//   `childDone`, `cancelRequested`.
// A run ends with the store's lifecycle events: `completed`, `failed`, `cancelled`, or
// `continuedAsNew` followed by the next run's `started`.
import { RunStoreError } from './errors.js';

/** The events the code issued, in the order it issued them. */
export const COMMANDS = new Set(['step', 'sleep', 'wait', 'child', 'value', 'patch']);

/** A custom event of the engine. */
export const custom = (name, data, recordedAt) => ({ type: 'custom', name, data, recordedAt });

/** What a command event names, to compare it with what the code asks for. */
export function commandName(name, data) {
  switch (name) {
    case 'step':
      return data.step;
    case 'sleep':
      return data.timer;
    case 'wait':
      return data.signal;
    case 'child':
      return `${data.workflowType} ${data.workflowId}`;
    case 'value':
      return data.kind;
    case 'patch':
      return data.patch;
    default:
      return '';
  }
}

/**
 * `value` as the journal gives it back: a JSON text read again, so the code sees the same
 * value live and on replay (a Date becomes its string, an undefined property goes). Throws
 * INVALID_INPUT for what JSON cannot hold (a BigInt, a cycle).
 */
export function asStored(value, field) {
  if (value === undefined) return undefined;
  let text;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new RunStoreError('INVALID_INPUT', `${field} cannot be stored as JSON: ${error.message}`, { field });
  }
  // A function or a symbol alone has no JSON text.
  return text === undefined ? undefined : JSON.parse(text);
}

/** `{ [key]: value }`, or `{}` for undefined: replay tells a value of undefined from null. */
export const withValue = (key, value) => (value === undefined ? {} : { [key]: value });

/** An error as the journal keeps it: name, message and code, if it has one. */
export function errorRecord(error) {
  if (error !== null && typeof error === 'object') {
    const record = { name: String(error.name ?? 'Error'), message: String(error.message ?? '') };
    if (typeof error.code === 'string') record.code = error.code;
    return record;
  }
  return { name: 'Error', message: String(error) };
}

/** An Error rebuilt from its record, with the same name, message and code. */
export function errorFrom(record) {
  const error = new Error(record?.message ?? '');
  Object.defineProperty(error, 'name', { value: record?.name ?? 'Error', writable: true, configurable: true });
  if (typeof record?.code === 'string') error.code = record.code;
  return error;
}

/** What a step's last failed attempt throws into the workflow. */
export function stepFailure(step, attempts, record) {
  if (record.code === 'OUTCOME_UNKNOWN') {
    return new RunStoreError(record.code, record.message, { step, attempts, idempotencyKey: record.idempotencyKey ?? null });
  }
  if (record.code === 'CANCELLED') return new RunStoreError(record.code, record.message, { step, attempts });
  const tries = attempts === 1 ? '1 attempt' : `${attempts} attempts`;
  return new RunStoreError('STEP_FAILED', `step ${step} failed after ${tries}: ${record.message}`, {
    step,
    attempts,
    cause: errorFrom(record),
  });
}

/** What `result()` throws for a run that ended `failed`. */
export function workflowFailure(workflowId, record) {
  return new RunStoreError('WORKFLOW_FAILED', `workflow ${workflowId} failed: ${record?.message ?? 'no reason recorded'}`, {
    workflowId,
    cause: errorFrom(record),
  });
}

/** What cancellation raises inside the workflow, and what `result()` throws for a cancelled run. */
export function cancellation(workflowId, reason) {
  const why = reason ? `: ${reason}` : '';
  return new RunStoreError('CANCELLED', `workflow ${workflowId} was cancelled${why}`, { workflowId, reason: reason ?? null });
}

/** Whether `error` is the cancellation of a run (as raised, or rebuilt from its record). */
export const isCancellation = (error) => error?.code === 'CANCELLED';
