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
    running?.abort();
    const stop = new Stop();
    const promise = perform(body, key, attempt, stop);
    this.#running.set(key, { attempt, promise, abort: () => stop.abort() });
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
    this.#running.get(key)?.abort();
    this.#running.delete(key);
  }

  abortAll() {
    for (const { abort } of this.#running.values()) abort();
    this.#running.clear();
  }
}

/**
 * A body's AbortSignal, made when the body first reads it: most bodies never do, and an
 * AbortController per step is a measurable part of a quick step's cost.
 */
class Stop {
  #controller = null;
  #aborted = false;

  get signal() {
    this.#controller ??= new AbortController();
    if (this.#aborted) this.#controller.abort();
    return this.#controller.signal;
  }

  abort() {
    this.#aborted = true;
    this.#controller?.abort();
  }
}

async function perform(body, idempotencyKey, attempt, stop) {
  const staged = [];
  const call = {
    idempotencyKey,
    attempt,
    get signal() {
      return stop.signal;
    },
    write(operation) {
      // Taken as it is now: a body that changes its object afterwards changes nothing.
      staged.push(structuredClone(operation));
    },
  };
  try {
    const value = await body(call);
    return { ok: true, value: asStored(value, 'result'), staged };
  } catch (error) {
    return { ok: false, error };
  }
}

/** The longest delay setTimeout takes; a later timer is armed again when this one fires. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * Timers that never fire early: each checks the clock when it fires and waits on if it must.
 * In a page they run in a small worker of their own where the page can start one: browsers
 * slow a hidden tab's timers (Firefox ESR's to once a second here) but not a worker's.
 * Elsewhere, or where the page's policy refuses the worker, setTimeout.
 */
export class Timers {
  #live = new Set();
  /** The clock worker: undefined until a first timer asks for it, null where there is none. */
  #clock = undefined;

  /** Calls `fire` once `Date.now() >= time`; returns the function that cancels it. */
  at(time, fire) {
    let cancelWait = null;
    let done = false;
    const cancel = () => {
      done = true;
      cancelWait?.();
      this.#live.delete(cancel);
    };
    const check = () => {
      if (done) return;
      const wait = time - Date.now();
      if (wait > 0) {
        cancelWait = this.#wait(Math.min(wait, MAX_DELAY_MS), check);
        return;
      }
      cancel();
      fire();
    };
    this.#live.add(cancel);
    cancelWait = this.#wait(Math.max(0, Math.min(time - Date.now(), MAX_DELAY_MS)), check);
    return cancel;
  }

  /** Calls `then` after `ms` (or sooner: `then` checks the clock); returns the function that cancels it. */
  #wait(ms, then) {
    if (this.#clock === undefined) this.#clock = ClockWorker.start();
    if (this.#clock?.running) return this.#clock.wait(ms, then);
    const handle = setTimeout(then, ms);
    return () => clearTimeout(handle);
  }

  cancelAll() {
    for (const cancel of [...this.#live]) cancel();
  }

  /** Cancels every timer and ends the clock worker. */
  close() {
    this.cancelAll();
    this.#clock?.end();
    this.#clock = undefined;
  }
}

/** The code of the clock worker: `[id, ms]` arms a timeout that posts `id`; `[id, -1]` clears it. */
const CLOCK = 'const t=new Map();onmessage=({data:[i,m]})=>{clearTimeout(t.get(i));t.delete(i);if(m>=0)t.set(i,setTimeout(()=>{t.delete(i);postMessage(i)},m))}';

/** A worker that keeps time for a page. */
class ClockWorker {
  running = true;
  #worker;
  #waiting = new Map();
  #next = 0;

  /** A clock worker, or null where a page cannot start one (Node, a policy without blob: workers). */
  static start() {
    if (typeof document === 'undefined' || typeof Worker !== 'function' || typeof Blob !== 'function') return null;
    try {
      return new ClockWorker(new Worker(URL.createObjectURL(new Blob([CLOCK], { type: 'text/javascript' }))));
    } catch {
      return null;
    }
  }

  constructor(worker) {
    this.#worker = worker;
    worker.onmessage = ({ data: id }) => {
      const then = this.#waiting.get(id);
      this.#waiting.delete(id);
      then?.();
    };
    // A worker refused after it was made (some browsers report a policy this way): every wait
    // is called now, checks the clock and waits again on setTimeout.
    worker.onerror = (event) => {
      event.preventDefault?.();
      this.end();
    };
  }

  wait(ms, then) {
    const id = this.#next++;
    this.#waiting.set(id, then);
    this.#worker.postMessage([id, ms]);
    return () => {
      if (this.#waiting.delete(id)) this.#worker.postMessage([id, -1]);
    };
  }

  end() {
    if (!this.running) return;
    this.running = false;
    this.#worker.terminate();
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const then of waiting) then();
  }
}
