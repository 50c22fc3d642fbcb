// Step bodies running in this engine, by idempotency key, and the engine's timers. A run that
// is loaded again (after a failed commit) joins the body of its step that still runs here
// instead of starting it twice.
import { asStored } from './workflow-events.js';

export class StepBodies {
  /** key → { attempt, promise, controller } */
  #running = new Map();

  /**
   * Runs attempt `attempt` of the step under `key`, or returns the run of it already going;
   * resolves to `{ ok: true, value, staged }` or `{ ok: false, error }`, never rejects.
   */
  run(key, attempt, body) {
    const running = this.#running.get(key);
    if (running?.attempt === attempt) return running.promise;
    running?.controller.abort();
    const controller = new AbortController();
    const promise = perform(body, { idempotencyKey: key, attempt, signal: controller.signal });
    this.#running.set(key, { attempt, promise, controller });
    return promise;
  }

  get(key) {
    return this.#running.get(key);
  }

  /** Forgets the attempt once its outcome is recorded. */
  forget(key, attempt) {
    if (this.#running.get(key)?.attempt === attempt) this.#running.delete(key);
  }

  /** Tells the body under `key` to stop (its `signal` aborts) and forgets it. */
  abort(key) {
    this.#running.get(key)?.controller.abort();
    this.#running.delete(key);
  }

  abortAll() {
    for (const { controller } of this.#running.values()) controller.abort();
    this.#running.clear();
  }
}

async function perform(body, args) {
  const staged = [];
  const write = (operation) => {
    // Taken as it is now: a body that changes its object afterwards changes nothing.
    staged.push(structuredClone(operation));
  };
  try {
    const value = await body({ ...args, write });
    return { ok: true, value: asStored(value, 'result'), staged };
  } catch (error) {
    return { ok: false, error };
  }
}

/** The longest delay setTimeout takes; a later timer is armed again when this one fires. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/** Timers that never fire early: each checks the clock when it fires and waits on if it must. */
export class Timers {
  #live = new Set();

  /** Calls `fire` once `Date.now() >= time`; returns the function that cancels it. */
  at(time, fire) {
    let handle = null;
    let done = false;
    const cancel = () => {
      done = true;
      clearTimeout(handle);
      this.#live.delete(cancel);
    };
    const check = () => {
      if (done) return;
      const wait = time - Date.now();
      if (wait > 0) {
        handle = setTimeout(check, Math.min(wait, MAX_DELAY_MS));
        return;
      }
      cancel();
      fire();
    };
    this.#live.add(cancel);
    handle = setTimeout(check, Math.max(0, Math.min(time - Date.now(), MAX_DELAY_MS)));
    return cancel;
  }

  cancelAll() {
    for (const cancel of [...this.#live]) cancel();
  }
}
