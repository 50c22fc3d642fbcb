// Calls issued in the same task travel to the store's worker together: each message costs a
// task (and often a thread wake-up) on both sides, and a burst of independent calls
// (`Promise.all` of reads, a runner settling several outbox rows) pays that twice instead of
// once per call. The first call of a task leaves at once, as a lone call always did; the
// calls after it in the same task leave as one `{ batch }` message at the end of the task
// (each captured when it was made, see wire.js). The worker runs them in order and
// answers them in one message, each call with its own result or error.

import { RunStoreError, toRunStoreError } from './errors.js';

export class Batcher {
  #post;
  #copy;
  #queue = [];
  #inTask = false;

  /**
   * @param {(message: object) => void} post sends one message
   * @param {(message: object) => object} copy what a call that leaves at the end of the task
   *   keeps of its message: the message itself when it was captured already (wire.js), else a
   *   copy, as the message a call posts at once is copied by postMessage
   */
  constructor(post, copy = (message) => message) {
    this.#post = post;
    this.#copy = copy;
  }

  /** Sends `message` now, or with the task's other calls; throws for what cannot be cloned. */
  send(message) {
    if (this.#inTask) {
      this.#queue.push(this.#copy(message));
      return;
    }
    this.#post(message);
    this.#inTask = true;
    queueMicrotask(() => this.#flush());
  }

  #flush() {
    this.#inTask = false;
    const messages = this.#queue;
    this.#queue = [];
    if (messages.length === 0) return;
    try {
      this.#post(messages.length === 1 ? messages[0] : { batch: messages });
    } catch {
      // Only a destination that closed meanwhile refuses them: a shared store's calls are sent
      // again to the next leader (tabs.js), a private store's fail with it (index.js).
    }
  }
}

/** The messages `data` carries: a batch's, or the one message it is. */
export function unbatch(data) {
  return Array.isArray(data?.batch) ? data.batch : [data];
}

/**
 * Whether a message from the store's worker reports a running call's progress (`rekey` of a
 * plain store) rather than answering it.
 */
export function isProgress(message) {
  return message.ok === undefined && message.progress !== undefined;
}

/**
 * Settles a call (its promise's `resolve` and `reject`) with the worker's answer: the value,
 * the value as JSON text (`json`: a history page or checkpoints cross as one string, parsed here
 * once, see host.js) or the error.
 */
export function settleCall({ resolve, reject }, answer) {
  if (!answer.ok) {
    reject(toRunStoreError(answer.error));
    return;
  }
  if (answer.json === undefined) {
    resolve(answer.value);
    return;
  }
  let value;
  try {
    value = JSON.parse(answer.json);
  } catch {
    reject(new RunStoreError('SERIALIZATION', "the store's JSON text did not parse"));
    return;
  }
  resolve(value);
}
