// The page side of the browser test of an encryption killed midway: for each point (a share
// of the progress, 0 to 1), a worker writes a plain store, another encrypts it and is
// terminated once its progress reaches the point, a third opens what is left. Resolves to
// what each point left: the store opened without a key (the plain file was still there) or
// only with it, and its heads.

/** Runs src/encrypt-worker.js in `mode`; resolves to its last message (or `stopped`). */
function runWorker(message, stopAt = null) {
  return new Promise((resolve) => {
    const worker = new Worker(new URL('./encrypt-worker.js', import.meta.url), { type: 'module' });
    const limit = setTimeout(() => {
      worker.terminate();
      resolve({ failed: `${message.mode} did not finish in 60 s` });
    }, 60_000);
    const done = (result) => {
      clearTimeout(limit);
      worker.terminate();
      resolve(result);
    };
    let reports = 0;
    worker.onmessage = ({ data }) => {
      if (data.progress) {
        reports++;
        if (stopAt !== null && data.progress.done >= stopAt * data.progress.total) done({ stopped: data.progress, reports });
      } else if (!data.started) {
        done({ ...data, reports });
      }
    };
    worker.onerror = (event) => done({ failed: event.message ?? 'the worker did not start' });
    worker.postMessage(message);
  });
}

export async function runEncryptionKilled({ medium, keyBytes, workflows, points }) {
  const results = [];
  for (const point of points) {
    const name = `killed-encryption-${Math.round(point * 100)}-${Date.now()}`;
    const base = { name, medium, keyBytes, workflows };
    const filled = await runWorker({ ...base, mode: 'fill' });
    if (!filled.filled) return { failed: filled.failed ?? JSON.stringify(filled) };
    const encrypting = await runWorker({ ...base, mode: 'encrypt' }, point);
    if (encrypting.failed) return { failed: encrypting.failed };
    const checked = await runWorker({ ...base, mode: 'check' });
    if (!checked.checked) return { failed: checked.failed ?? JSON.stringify(checked) };
    results.push({ point, stopped: encrypting.stopped ?? null, finished: Boolean(encrypting.finished), ...checked.checked });
  }
  return { results };
}
