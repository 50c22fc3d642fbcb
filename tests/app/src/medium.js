// Where the tests' stores live: the medium in the page's query (`?medium=indexeddb`, set by
// tests/js/browser.mjs from RUNSTORE_MEDIUM), OPFS by default. A store the tests ask for on
// OPFS opens on that medium instead, in the page (main.js wraps RunStore.open) and in the app's
// own workers (each gets the medium in its message), so the same tests run on each medium.

/** The page's medium: 'opfs' or 'indexeddb'. */
export function pageMedium() {
  return new URLSearchParams(globalThis.location?.search ?? '').get('medium') ?? 'opfs';
}

/**
 * `options` with persistence 'opfs' replaced by `medium`; other options as they are, getters
 * included (not called: the store's own reading of them is what tests of bad options test).
 */
export function onMedium(options, medium) {
  if (!medium || medium === 'opfs') return options;
  let descriptors;
  try {
    if (options?.persistence !== 'opfs') return options;
    descriptors = Object.getOwnPropertyDescriptors(options);
  } catch {
    return options; // options that cannot be read (a revoked Proxy) go as given, to be refused
  }
  const persistence = { value: medium, enumerable: true, writable: true, configurable: true };
  return Object.defineProperties({}, { ...descriptors, persistence });
}
