// The engine on runstore/core in an app's own dedicated worker: runs the `onCore` case of
// src/workflow-cases.js there and posts its report.
import { CASES, openCore } from './workflow-cases.js';

self.onmessage = async ({ data: { medium } }) => {
  try {
    self.postMessage(await CASES.onCore((name) => openCore(name, medium)));
  } catch (error) {
    self.postMessage({ failed: String(error?.stack ?? error) });
  }
};
