// The store in this thread, where there is no `Worker` to run it in (Node, a server rendering
// pages): the private store's worker code itself (serve.js, which runs each call through
// host.js) behind an object that the client talks to as it talks to a worker. So answers,
// errors and change notices come from the same code as in a browser, and only the transport
// differs: what the client posts is copied at once (structuredClone, as postMessage copies: a
// caller that changes its objects after the call changes nothing), and every message is
// delivered in a later task, so every call settles asynchronously, in order, as through a
// worker. Nothing here holds the process open: an idle store lets Node exit, a call in flight
// keeps it running.
//
// The host's answers are not copied: each is made for its call (by the wasm, or as plain data)
// and nothing else holds it. A copy would be made in Node's own realm, while the store makes
// its answers' Uint8Arrays with the `Uint8Array` the package found when it loaded, the app's,
// as runstore/core does: under jsdom's globals (vitest's jsdom environment) a copied answer's
// bytes would not be `instanceof Uint8Array` in the app.
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
  const post = (listeners, copy) => (data) => {
    if (!running) return;
    const message = copy(data);
    later(() => {
      if (!running) return;
      for (const listener of listeners) listener({ data: message });
    });
  };
  const asMade = (data) => data;
  const listen = (listeners) => (type, listener) => {
    if (type === 'message') listeners.add(listener);
  };
  // Locks, channels and OPFS belong to stores shared by tabs, which a page opens in workers.
  serve(
    { postMessage: post(toPage, asMade), addEventListener: listen(toHost) },
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
    postMessage: post(toHost, structuredClone),
    addEventListener: listen(toPage),
    terminate() {
      running = false;
    },
  };
}
