// A later task, after every microtask queued now has run: the engine hands a workflow a
// result, waits for this, and then knows what the workflow's code did with it (it is waiting
// on the engine again, or it ended). setImmediate where there is one (Node); elsewhere a
// MessageChannel, which no browser throttles (setTimeout clamps nested calls to 4 ms, and to
// 1 s in a hidden tab).

let port = null;
const waiting = [];

function channel() {
  const { port1, port2 } = new MessageChannel();
  port1.onmessage = () => waiting.shift()?.();
  return port2;
}

/** Resolves in a later task. */
export function nextTask() {
  if (typeof setImmediate === 'function') return new Promise((resolve) => setImmediate(resolve));
  port ??= channel();
  return new Promise((resolve) => {
    waiting.push(resolve);
    port.postMessage(null);
  });
}

/**
 * Makes `task` run one at a time: asked while it runs, it runs once more when it is done
 * (however often it was asked meanwhile), and again as long as it resolves to true. Returns
 * the function that asks.
 */
export function serially(task) {
  let running = false;
  let again = false;
  return async function ask() {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      let more;
      do {
        again = false;
        more = await task();
      } while (again || more === true);
    } finally {
      running = false;
    }
  };
}

/**
 * Makes `task` run one at a time, each ask answered by a run that starts after it: asks made
 * while it runs share the one run that follows, and its result. Returns the function that
 * asks; its `settled()` resolves once the runs asked for so far have ended.
 */
export function oneAfterAnother(task) {
  let tail = Promise.resolve();
  let next = null;
  const ask = () => {
    if (next) return next;
    const run = tail.then(() => {
      next = null;
      return task();
    });
    next = run;
    tail = run.catch(() => {});
    return run;
  };
  /** Resolves once the runs asked for so far have ended. */
  ask.settled = () => tail;
  return ask;
}
