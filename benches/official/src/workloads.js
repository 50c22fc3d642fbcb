// The workloads of SPEC section 5 (W1 to W5), written once against the store's API shape and
// run unchanged through runstore/core, the main-thread RunStore client and the official SQLite
// build (official.js gives it the same methods over the same SQL). Every call is awaited on
// every side, so each pays the same microtask per call.
//
// `scale` (1 = the SPEC's counts) shrinks a workload for quick runs; counts never reach 0.

const EVENT_DATA = (workflow, n) => ({
  activity: 'charge-card',
  attempt: 1,
  workflow,
  step: n,
  result: { ok: true, amount: 1999, currency: 'EUR', ref: 'ch_3NqL8XKf2b9sQz' },
});

/** A journal event of about 200 bytes once encoded, as benches/support/workloads.rs builds it. */
export const payloadEvent = (workflow, n) => ({
  type: 'custom',
  name: 'activityCompleted',
  recordedAt: 1_700_000_000_000 + n,
  data: EVENT_DATA(workflow, n),
});

const wf = (i) => `workflow-${String(i).padStart(4, '0')}`;
const scaled = (count, scale) => Math.max(1, Math.round(count * scale));

const OUTBOX_INPUT = new TextEncoder().encode(
  '{"amount":1999,"currency":"EUR","card":"tok_visa_4242","customer":"cus_9s8d7f"}',
);
const outboxRow = (i) => ({
  dispatchKey: `${wf(i % 100)}:${String(i).padStart(5, '0')}`,
  workflowId: wf(i % 100),
  ordinal: i,
  activityType: 'charge-card',
  input: OUTBOX_INPUT,
  visibleAfter: i % 1000,
  attempt: 0,
  runId: 'run-1',
  namespace: 'default',
});

const checkpointState = (n) => ({ step: n, messages: 12, cursor: 'msg_01HZX3K9Q7', tools: ['search', 'fetch'] });
const checkpointId = (i) => `checkpoint-${String(i).padStart(3, '0')}`;

function check(condition, what) {
  if (!condition) throw new Error(`workload check failed: ${what}`);
}

const BATCH = 100;
const NOW = 1_000_000;

function w2Shape(scale) {
  return { workflows: scaled(200, scale), events: 500 };
}

async function w2Write(s, scale) {
  const { workflows, events } = w2Shape(scale);
  for (let w = 0; w < workflows; w++) {
    for (let start = 0; start < events; start += BATCH) {
      const batch = [];
      for (let n = start; n < start + BATCH; n++) batch.push(payloadEvent(w, n));
      check((await s.append(wf(w), batch, start)) === start + BATCH, 'W2 head');
    }
  }
}

async function w4Insert(s, rows) {
  for (let start = 0; start < rows; start += BATCH) {
    const batch = [];
    for (let i = start; i < Math.min(start + BATCH, rows); i++) batch.push(outboxRow(i));
    await s.insertOutbox(batch);
  }
}

/** Claims until the outbox is empty, settling each claimed batch with `settle`. */
async function w4Drain(s, settle) {
  let done = 0;
  for (;;) {
    const claimed = await s.claimOutbox(NOW, BATCH);
    if (claimed.length === 0) return done;
    done += claimed.length;
    await settle(claimed.map((row) => ({ dispatchKey: row.dispatchKey, claimToken: row.claimToken })));
  }
}

const w4Rows = (scale) => Math.max(BATCH, Math.round((10_000 * scale) / BATCH) * BATCH);

/**
 * Each workload: `unit`, `count(scale)` (units timed), an untimed `prepare(s, scale)` and the
 * timed `run(s, scale)`.
 */
export const WORKLOADS = {
  W1: {
    title: 'W1 single appends',
    unit: 'appends',
    count: (scale) => 100 * scaled(50, scale),
    async run(s, scale) {
      const events = scaled(50, scale);
      for (let n = 0; n < events; n++) {
        for (let w = 0; w < 100; w++) {
          check((await s.append(wf(w), [payloadEvent(w, n)], n)) === n + 1, 'W1 head');
        }
      }
    },
  },
  W2: {
    title: 'W2 batched appends',
    unit: 'events',
    count: (scale) => w2Shape(scale).workflows * w2Shape(scale).events,
    run: w2Write,
  },
  W3: {
    title: 'W3 history reads',
    unit: 'events',
    count: (scale) => w2Shape(scale).workflows * w2Shape(scale).events,
    prepare: w2Write,
    async run(s, scale) {
      const { workflows, events } = w2Shape(scale);
      for (let w = 0; w < workflows; w++) {
        const page = await s.readHistory(wf(w));
        check(page.items.length === events && page.items[events - 1].data.step === events - 1, 'W3 history');
      }
    },
  },
  W4: {
    title: 'W4 outbox (batch complete)',
    unit: 'rows',
    count: w4Rows,
    async run(s, scale) {
      const rows = w4Rows(scale);
      await w4Insert(s, rows);
      check((await w4Drain(s, (claims) => s.completeOutboxBatch(claims))) === rows, 'W4 rows');
    },
  },
  W4each: {
    title: 'W4 outbox, one completeOutbox per row',
    unit: 'rows',
    count: w4Rows,
    async run(s, scale) {
      const rows = w4Rows(scale);
      await w4Insert(s, rows);
      const settle = async (claims) => {
        for (const claim of claims) await s.completeOutbox(claim.dispatchKey, claim.claimToken);
      };
      check((await w4Drain(s, settle)) === rows, 'W4each rows');
    },
  },
  W5: {
    title: 'W5 checkpoint CAS',
    unit: 'updates',
    count: (scale) => scaled(10_000, scale),
    async prepare(s) {
      for (let i = 0; i < 100; i++) {
        await s.compareAndSwapCheckpoint(
          { checkpointId: checkpointId(i), runId: 'run-1', revision: 0, state: checkpointState(0), updatedAt: 0 },
          null,
        );
      }
    },
    async run(s, scale) {
      const updates = scaled(10_000, scale);
      for (let n = 0; n < updates; n++) {
        const expected = Math.floor(n / 100);
        await s.compareAndSwapCheckpoint(
          {
            checkpointId: checkpointId(n % 100),
            runId: 'run-1',
            revision: expected + 1,
            state: checkpointState(n),
            updatedAt: n,
          },
          expected,
        );
      }
    },
  },
};

/** The key of the encrypted setups: 32 bytes, used as they are (no passphrase stretching). */
const BENCH_KEY = Array.from({ length: 32 }, (_, i) => (i * 29 + 3) % 256);

/**
 * The store options of a setup: `memory`, `opfs-full` and `opfs-relaxed` (OPFS at that
 * durability), `indexeddb` (IndexedDB, full durability: each write stored strictly); with
 * `-encrypted` after the name, the same store encrypted with a key of 32 bytes.
 */
export function storeOptions(setup) {
  if (setup.endsWith('-encrypted')) {
    return { ...storeOptions(setup.slice(0, -'-encrypted'.length)), key: new Uint8Array(BENCH_KEY) };
  }
  if (setup === 'memory') return { persistence: 'memory' };
  if (setup === 'indexeddb') return { persistence: 'indexeddb', durability: 'full' };
  return { persistence: 'opfs', durability: setup.slice('opfs-'.length) };
}

/**
 * Runs one workload on a store opened by `open()` and closed by `close(store)`; resolves to
 * { count, ms } for the timed part alone.
 */
export async function measure(workload, scale, open, close) {
  const spec = WORKLOADS[workload];
  if (!spec) throw new Error(`unknown workload ${workload}`);
  const store = await open();
  try {
    if (spec.prepare) await spec.prepare(store, scale);
    const started = performance.now();
    await spec.run(store, scale);
    const ms = performance.now() - started;
    return { count: spec.count(scale), ms };
  } finally {
    await close(store);
  }
}
