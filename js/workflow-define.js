// What an app hands the engine: workflow definitions, step options and the error a step
// body throws to say "do not try again". Checked here, once, so that the engine's own code
// can trust them.
import { RunStoreError } from './errors.js';

/** The longest workflow type, step, timer or signal name (they become parts of store ids). */
const MAX_NAME_CHARS = 200;

/**
 * A workflow: a name (its type in the store) and an async function of `(ctx, input)` whose
 * steps the engine records and replays.
 * @template I, O
 * @param {string} name
 * @param {(ctx: any, input: I) => Promise<O>} run
 */
export function defineWorkflow(name, run) {
  checkName(name, 'name');
  if (typeof run !== 'function') {
    throw new RunStoreError('INVALID_INPUT', `workflow ${name}: its function must be a function`, { field: 'run' });
  }
  return Object.freeze({ name, run });
}

/** Whether `value` is what defineWorkflow returns. */
export function isDefinition(value) {
  return value !== null && typeof value === 'object' && typeof value.name === 'string' && typeof value.run === 'function';
}

/**
 * Thrown by a step body for a failure that another attempt would not mend (a declined card,
 * a refused request): the step fails at once, without its remaining attempts.
 */
export class FatalError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'FatalError';
  }
}

/** Whether `error` is a FatalError, also one from another realm or package copy. */
export const isFatal = (error) => error instanceof FatalError || error?.name === 'FatalError';

/** How a step is tried again when its body throws. */
export const DEFAULT_RETRY = Object.freeze({ maxAttempts: 3, initialIntervalMs: 1000, backoffCoefficient: 2, maxIntervalMs: 60_000 });

/** A step's options, checked and completed: `{ once, retry }`. Throws INVALID_INPUT naming the option. */
export function stepOptions(options) {
  if (options === undefined || options === null) return { once: false, retry: DEFAULT_RETRY };
  if (typeof options !== 'object') throw invalid('step options must be an object', 'options');
  for (const key of Object.keys(options)) {
    if (key !== 'once' && key !== 'retry') throw invalid(`unknown step option ${key}; once or retry`, `options.${key}`);
  }
  const once = options.once ?? false;
  if (typeof once !== 'boolean') throw invalid('once must be a boolean', 'options.once');
  return { once, retry: retryPolicy(options.retry) };
}

function retryPolicy(retry) {
  if (retry === undefined || retry === null) return DEFAULT_RETRY;
  if (typeof retry !== 'object') throw invalid('retry must be an object', 'options.retry');
  const policy = { ...DEFAULT_RETRY };
  for (const key of Object.keys(retry)) {
    if (!(key in DEFAULT_RETRY)) throw invalid(`unknown retry option ${key}`, `options.retry.${key}`);
    policy[key] = retry[key];
  }
  const { maxAttempts, initialIntervalMs, backoffCoefficient, maxIntervalMs } = policy;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) throw invalid('maxAttempts must be a positive integer', 'options.retry.maxAttempts');
  if (!Number.isSafeInteger(initialIntervalMs) || initialIntervalMs < 0) throw invalid('initialIntervalMs must be a non-negative integer', 'options.retry.initialIntervalMs');
  if (!Number.isFinite(backoffCoefficient) || backoffCoefficient < 1) throw invalid('backoffCoefficient must be a number of at least 1', 'options.retry.backoffCoefficient');
  if (!Number.isSafeInteger(maxIntervalMs) || maxIntervalMs < initialIntervalMs) throw invalid('maxIntervalMs must be an integer of at least initialIntervalMs', 'options.retry.maxIntervalMs');
  return Object.freeze(policy);
}

/** The wait before attempt `attempt + 1`, after attempt `attempt` (1, 2, ...) failed. */
export function retryDelayMs(policy, attempt) {
  const delay = policy.initialIntervalMs * policy.backoffCoefficient ** (attempt - 1);
  return Math.round(Math.min(policy.maxIntervalMs, delay));
}

/** Checks a workflow type, step, timer or signal name. */
export function checkName(name, field) {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_CHARS) {
    throw invalid(`${field} must be a string of 1 to ${MAX_NAME_CHARS} characters`, field);
  }
}

/** Checks a duration or a time in milliseconds. */
export function checkMillis(value, field) {
  if (!Number.isSafeInteger(value) || value < 0) throw invalid(`${field} must be a non-negative integer of milliseconds`, field);
}

export function invalid(message, field) {
  return new RunStoreError('INVALID_INPUT', message, { field });
}
