// runstore/core in an app's own worker, running the parity cases (parity.js) on a fresh store.
import * as core from 'runstore/core';
import { runOnCore } from './parity.js';

self.onmessage = async ({ data: { name } }) => {
  try {
    self.postMessage({ outcomes: await runOnCore(core, name) });
  } catch (error) {
    self.postMessage({ failed: String(error?.stack ?? error) });
  }
};
