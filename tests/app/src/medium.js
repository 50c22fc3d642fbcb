// Where the tests' stores live: the medium in the page's query (`?medium=indexeddb`, set by
// tests/js/browser.mjs from RUNSTORE_MEDIUM), OPFS by default. A store the tests ask for on
// OPFS opens on that medium instead, in the page (main.js wraps RunStore.open) and in the app's
// own workers (each gets the medium in its message), so the same tests run on each medium.

/** The page's medium: 'opfs' or 'indexeddb'. */
export function pageMedium() {
  return new URLSearchParams(globalThis.location?.search ?? '').get('medium') ?? 'opfs';
}

/** `options` with persistence 'opfs' replaced by `medium`; other options as they are. */
export function onMedium(options, medium) {
  if (!medium || medium === 'opfs' || options?.persistence !== 'opfs') return options;
  return { ...options, persistence: medium };
}
