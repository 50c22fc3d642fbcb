// Calls issued in the same task travel to the store's worker as one message: each message wakes
// a thread on both sides, and a burst of independent calls (`Promise.all` of reads, a runner
// settling several outbox rows) pays that once. The worker runs them in the order they were
// issued and answers them together in one message, each call with its own result or error.

/**
 * Collects messages for one destination and posts them at the end of the current task: one
 * alone as itself, several as `{ batch: [...] }`.
 */
export class Batcher {
  #post;
  #refuse;
  #queue = [];
  #ready;
  #scheduled = false;

  /**
   * @param {(message: object) => void} post sends one message (it may throw: a value that cannot be cloned)
   * @param {(message: object, error: unknown) => void} refuse told of a message that could not be sent
   * @param {{ ready?: boolean }} [options] `ready: false` holds messages until `open()`
   */
  constructor(post, refuse, { ready = true } = {}) {
    this.#post = post;
    this.#refuse = refuse;
    this.#ready = ready;
  }

  get ready() {
    return this.#ready;
  }

  send(message) {
    this.#queue.push(message);
    this.#schedule();
  }

  /** Lets held messages go (the destination answered that it listens). */
  open() {
    this.#ready = true;
    this.#schedule();
  }

  /** Drops what is still queued: the destination is gone, and its callers are re-sent elsewhere. */
  close() {
    this.#ready = false;
    this.#queue = [];
  }

  #schedule() {
    if (this.#scheduled || !this.#ready || this.#queue.length === 0) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      if (this.#ready) this.#flush();
    });
  }

  #flush() {
    const messages = this.#queue;
    this.#queue = [];
    if (messages.length > 1) {
      try {
        this.#post({ batch: messages });
        return;
      } catch {
        // One of them cannot be cloned: send each alone, so only that one fails.
      }
    }
    for (const message of messages) {
      try {
        this.#post(message);
      } catch (error) {
        this.#refuse(message, error);
      }
    }
  }
}

/** The messages `data` carries: a batch's, or the one message it is. */
export function unbatch(data) {
  return Array.isArray(data?.batch) ? data.batch : [data];
}
