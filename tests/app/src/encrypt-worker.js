// A store worker for the browser test of an encryption killed midway (src/encrypt-kill.js):
// `fill` writes a plain store, `encrypt` encrypts it in place and posts each progress report
// (the page terminates it after one of them), `check` opens the store without a key and with
// it and reports which opened and what it holds.
import { init, RunStoreCore } from 'runstore/core';

/** `open()`, backing off while a terminated worker still holds the store. */
async function retrying(open) {
  let wait = 10;
  for (let attempt = 1; ; attempt++) {
    try {
      return await open();
    } catch (error) {
      if (error.code !== 'BUSY' || attempt === 30) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, 500);
    }
  }
}

const outcome = async (open) => {
  try {
    const store = await retrying(open);
    const heads = [store.head('wf-0'), store.head(`wf-${self.workflows - 1}`)];
    await store.close();
    return { heads };
  } catch (error) {
    return { code: error.code ?? String(error) };
  }
};

self.onmessage = async ({ data: { mode, name, medium, keyBytes, workflows } }) => {
  self.workflows = workflows;
  const options = { persistence: medium };
  const key = new Uint8Array(keyBytes);
  try {
    await init();
    if (mode === 'fill') {
      const store = await RunStoreCore.open(name, options);
      for (let at = 0; at < workflows; at += 200) {
        const operations = [];
        for (let n = at; n < Math.min(at + 200, workflows); n++) {
          operations.push({ op: 'append', workflowId: `wf-${n}`, expectedSeq: 0, events: [{ type: 'custom', name: 'noted', recordedAt: 1 }] });
        }
        store.commit({ operations });
      }
      await store.close();
      self.postMessage({ filled: true });
    } else if (mode === 'encrypt') {
      const store = await RunStoreCore.open(name, options);
      self.postMessage({ started: true });
      store.rekey(key, { onProgress: (progress) => self.postMessage({ progress }) });
      await store.flush();
      await store.close();
      self.postMessage({ finished: true });
    } else {
      const withoutKey = await outcome(() => RunStoreCore.open(name, options));
      const withKey = withoutKey.code ? await outcome(() => RunStoreCore.open(name, { ...options, key })) : null;
      self.postMessage({ checked: { withoutKey, withKey } });
    }
  } catch (error) {
    self.postMessage({ failed: `${mode}: ${error.code ?? ''} ${error.message ?? error}` });
  }
};
