// The store in this thread, where there is no `Worker` to run it in (Node, a server rendering
// pages): the private store's worker code itself (serve.js, which runs each call through
// host.js) behind an object that the client talks to as it talks to a worker. So answers,
// errors and change notices come from the same code as in a browser, and only the transport
// differs: what is posted is copied at once (structuredClone, as postMessage copies: a caller
// that changes its objects after the call changes nothing) and delivered in a later task, so
// every call settles asynchronously, in order, as through a worker. Nothing here holds the
// process open: an idle store lets Node exit, a call in flight keeps it running.
import { init, RunStoreCore } from './core.js';
import { serve } from './serve.js';

/** Runs `deliver` in a later task (setImmediate where there is one: setTimeout clamps to 1 ms or more). */
const later = typeof setImmediate === 'function' ? setImmediate : (deliver) => setTimeout(deliver, 0);

/**
 * Starts a store host in this thread; returns its end as a page sees a worker's:
 * `postMessage`, `addEventListener('message')` and `terminate`. `error` and `messageerror`
 * never fire: a store that cannot load its wasm fails its `open` call.
 */
export function startInProcess() {
  let running = true;
  const toPage = new Set();
  const toHost = new Set();
  const post = (listeners) => (data) => {
    if (!running) return;
    const copy = structuredClone(data);
    later(() => {
      if (!running) return;
      for (const listener of listeners) listener({ data: copy });
    });
  };
  const listen = (listeners) => (type, listener) => {
    if (type === 'message') listeners.add(listener);
  };
  // Locks, channels and OPFS belong to stores shared by tabs, which a page opens in workers.
  serve(
    { postMessage: post(toPage), addEventListener: listen(toHost) },
    {
      init: () => init(),
      RunStoreCore,
      locks: undefined,
      BroadcastChannel: undefined,
      storage: undefined,
      // Every store of the process runs on its one wasm instance: a trap leaves it untrustworthy.
      afterTrap: 'start the process again (its stores share the one wasm instance that trapped)',
    },
  );
  return {
    postMessage: post(toHost),
    addEventListener: listen(toPage),
    terminate() {
      running = false;
    },
  };
}
