// The SPEC §5 workloads (W1-W5, scaled by `scale`), written once against `call(method, ...args)`
// so that the same code runs on runstore/core in a worker and through the main-thread client.
// `together`: calls that do not depend on each other are issued at once (Promise.all) instead
// of each awaited in turn. Resolves to { W1..W5: ms }.

const text = 'x'.repeat(150);
/** A custom event of about 200 bytes as JSON. */
const event = (i) => ({ type: 'custom', name: 'bench', recordedAt: i, data: { i, text } });

export async function runWorkloads(call, { prefix, scale = 1, together = false }) {
  const each = async (items, fn) => {
    if (together) await Promise.all(items.map(fn));
    else for (const item of items) await fn(item);
  };
  const range = (n) => Array.from({ length: n }, (_, i) => i);
  const time = async (fn) => {
    const started = performance.now();
    await fn();
    return performance.now() - started;
  };
  const ms = {};
  // W1: single appends, one event each, workflow after workflow within a round.
  const w1 = range(Math.max(1, Math.round(100 * scale))).map((i) => `${prefix}w1-${i}`);
  ms.W1 = await time(async () => {
    for (let seq = 0; seq < 50; seq++) await each(w1, (wf) => call('append', wf, [event(seq)], seq));
  });
  // W2: batched appends, 100 events per append.
  const w2 = range(Math.max(1, Math.round(200 * scale))).map((i) => `${prefix}w2-${i}`);
  const batch = range(100).map(event);
  ms.W2 = await time(async () => {
    for (let round = 0; round < 5; round++) await each(w2, (wf) => call('append', wf, batch, round * 100));
  });
  // W3: every event of each W2 workflow.
  ms.W3 = await time(() =>
    each(w2, async (wf) => {
      const page = await call('readHistory', wf, { limit: 500 });
      if (page.items.length !== 500) throw new Error(`W3 read ${page.items.length} events of ${wf}`);
    }),
  );
  // W4: outbox rows inserted 100 per call, then claimed 100 at a time, each claim completed as a batch.
  const rows = Math.max(100, Math.round(10_000 * scale));
  ms.W4 = await time(async () => {
    await each(range(rows / 100), (b) =>
      call(
        'insertOutbox',
        range(100).map((i) => ({
          dispatchKey: `${prefix}k${b * 100 + i}`,
          workflowId: `${prefix}w4`,
          ordinal: b * 100 + i,
          activityType: 'act',
          input: new Uint8Array(16),
          visibleAfter: 0,
        })),
      ),
    );
    for (;;) {
      const claimed = await call('claimOutbox', 1, 100, null);
      if (claimed.length === 0) break;
      await call('completeOutboxBatch', claimed.map(({ dispatchKey, claimToken }) => ({ dispatchKey, claimToken })));
    }
  });
  // W5: compare-and-swap round robin over 100 checkpoints.
  const checkpoints = range(100).map((i) => `${prefix}cp-${i}`);
  const swaps = Math.max(100, Math.round(10_000 * scale));
  ms.W5 = await time(async () => {
    for (let round = 0; round * 100 < swaps; round++) {
      await each(checkpoints, (id) =>
        call('compareAndSwapCheckpoint', { checkpointId: id, revision: round, state: { round }, updatedAt: round }, round === 0 ? null : round - 1),
      );
    }
  });
  return ms;
}

/**
 * Microseconds per call, each awaited in turn, `n` of each: a head read, an append of 100
 * events, a read of 500 events, and `n` head reads issued together (`headTogether`).
 */
export async function perCall(call, { prefix, n }) {
  const us = {};
  const time = async (label, fn) => {
    const started = performance.now();
    await fn();
    us[label] = ((performance.now() - started) * 1000) / n;
  };
  const events = Array.from({ length: 100 }, (_, i) => event(i));
  for (let i = 0; i < 5; i++) await call('append', `${prefix}read`, events, i * 100);
  await time('head', async () => {
    for (let i = 0; i < n; i++) await call('head', `${prefix}read`);
  });
  await time('headTogether', () => Promise.all(Array.from({ length: n }, () => call('head', `${prefix}read`))));
  await time('append100', async () => {
    for (let i = 0; i < n; i++) await call('append', `${prefix}append`, events, i * 100);
  });
  await time('read500', async () => {
    for (let i = 0; i < n; i++) await call('readHistory', `${prefix}read`, { limit: 500 });
  });
  return us;
}
