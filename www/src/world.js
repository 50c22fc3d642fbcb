// The outside world the workflows' steps act on: a payment API, a mail server,
// a web search... It is simulated here, and it lives outside the store (in localStorage), as a
// real service would, so that it can testify to what happened to it:
//   calls     how many requests arrived under an idempotency key;
//   performed how many times the effect was actually applied (a charge made, a mail sent).
// Like a payment API with idempotency keys, a service applies the effect of a key once and
// answers a repeated request with the first answer, flagged `replayed`; a service without keys
// (`idempotent: false`, a mail server) applies every request it gets. The engine's job is to
// make repeated requests rare (a step's recorded result) and harmless (the key), and to never
// repeat a request to a service without keys (a `once` step); `performed` must end at exactly 1
// for every effect that completed, however often the page was reloaded.

const KEY = 'runstore-demo:world';

function load() {
  try {
    return JSON.parse(localStorage.getItem(KEY) ?? '{}');
  } catch {
    return {};
  }
}

function save(ledger) {
  localStorage.setItem(KEY, JSON.stringify(ledger));
}

let wiped = false;

function update(key, change) {
  if (wiped) return change(undefined); // a call still running when the world was reset
  const ledger = load();
  ledger[key] = change(ledger[key]);
  save(ledger);
  return ledger[key];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Everything the services saw, by idempotency key. */
export function worldLedger() {
  return load();
}

export function resetWorld() {
  wiped = true;
  localStorage.removeItem(KEY);
}

/**
 * Sends one request to a simulated service. Half-way through its latency the service applies
 * the effect (once per key, if it takes keys): `perform(request, callNumber)` returns the answer or throws the
 * service's error. A page that reloads during the call loses the answer, not the effect.
 */
export async function callService(capability, key, request, { latencyMs, perform, idempotent = true }) {
  const entry = update(key, (e) => ({
    capability,
    calls: (e?.calls ?? 0) + 1,
    performed: e?.performed ?? 0,
    output: e?.output ?? null,
    lastError: e?.lastError ?? null,
  }));
  await sleep(latencyMs / 2);
  if (idempotent && entry.performed > 0) {
    await sleep(latencyMs / 2);
    return { ...load()[key].output, replayed: true };
  }
  let output;
  try {
    output = perform(request, entry.calls);
  } catch (error) {
    update(key, (e) => ({ ...e, lastError: error.message }));
    throw error;
  }
  update(key, (e) => ({ ...e, performed: e.performed + 1, output, lastError: null }));
  await sleep(latencyMs / 2);
  return output;
}
