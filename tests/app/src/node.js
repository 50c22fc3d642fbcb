// The package as code in Node imports it (a server rendering pages, an app's unit tests): by
// its name, resolved from node_modules (the packed tarball). What tests/js/package.test.mjs
// hands its cases when they run in Node (RUNSTORE_HOST=node), as src/main.js does in a page.
import { RunStore, RunStoreError, ErrorCode, storageEstimate, requestPersistence } from 'runstore';
import * as core from 'runstore/core';
import { runOnClient, runOnCore } from './parity.js';

/** The parity cases (src/parity.js) through runstore/core and through RunStore, both in this process. */
async function runParity(name, options) {
  let outcomes;
  try {
    outcomes = { outcomes: await runOnCore(core, name) };
  } catch (error) {
    outcomes = { failed: String(error?.stack ?? error) };
  }
  return { core: outcomes, client: await runOnClient(RunStore, name, options) };
}

export const runstore = { RunStore, RunStoreError, ErrorCode, storageEstimate, requestPersistence, runParity };
