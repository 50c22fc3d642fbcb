// runstore/inspector on a store seeded the same way every time, for its screenshots
// (tests/js/inspector-screens.test.mjs): fixed ids, times and payloads, and a page clock fixed
// at NOW, so that what the element draws ("running for 1 min 35 s", "in 20 s", the time a
// change was heard) is the same pixel for pixel from one run to the next. The workflows'
// journals are written as runstore/workflow writes them (its events, ledger records, timers
// and visibility attributes) rather than run by an engine, whose times are the real clock's.
import { RunStore } from 'runstore';
import 'runstore/inspector';

/** The page's "now": 2026-03-14 09:30:00 UTC. */
export const NOW = Date.UTC(2026, 2, 14, 9, 30, 0);
const S = 1000;
const MIN = 60 * S;
const encode = (text) => new TextEncoder().encode(text);
/** A run id shaped as the engine's (a UUID), fixed. */
const runIdOf = (n) => `0e6c2f4a-5b1d-4c3e-9a7f-${String(n).padStart(12, '0')}`;

/**
 * Fixes the page's clock at `now`: `Date.now()` and `new Date()` give it, a date given its
 * time is as usual, and timers (setTimeout) run on as before.
 */
function fixClock(now) {
  const Real = Date;
  globalThis.Date = class extends Real {
    constructor(...args) {
      super(...(args.length ? args : [now]));
    }

    static now() {
      return now;
    }
  };
}

/** One workflow as the engine writes it: journal, visibility record, ledger records, timers. */
function workflow({ id, n, type, startAt, input, events, status, closeAt = null, failedStep = null, failureReason = null, steps = 0, step = null, waiting = null, effects = [], timers = [] }) {
  const runId = runIdOf(n);
  const started = { type: 'started', workflowType: type, runId, recordedAt: startAt, data: { input, origin: null, parent: null } };
  // `[at, name, data]`: a custom event of the engine; `[at, { type, ... }]`: a lifecycle one.
  const journal = [started, ...events.map(([at, name, data]) => (typeof name === 'string'
    ? { type: 'custom', name, data, recordedAt: startAt + at }
    : { ...name, recordedAt: startAt + at }))];
  const key = (stepName) => `${id}/${runId}/${stepName}`;
  return [
    { op: 'append', workflowId: id, events: journal, expectedSeq: 0 },
    {
      op: 'upsertVisibility',
      record: {
        workflowId: id, runId, workflowType: type, status, startTime: startAt, closeTime: closeAt, failedStep, failureReason, head: journal.length,
        searchAttributes: { engine: 'runstore/workflow', origin: null, firstSeq: 1, steps, step, waiting },
      },
    },
    ...effects.map(([stepName, attempt, effectStatus, at]) => ({
      op: 'compareAndSwapEffect',
      record: { effectId: key(stepName), capabilityId: stepName, idempotencyKey: key(stepName), revision: 0, request: { attempt }, status: effectStatus, updatedAt: startAt + at },
      expectedRevision: null,
    })),
    ...timers.map(([timerId, fireAt]) => ({ op: 'scheduleTimer', workflowId: id, timerId, fireAt })),
  ];
}

/** The workflows: running (waiting for a signal, sleeping, retrying), completed, failed, cancelled. */
function workflows() {
  const busy = { name: 'Error', message: 'the card network is busy' };
  return [
    workflow({
      id: 'order-1042', n: 1042, type: 'order', startAt: NOW - 95 * S, input: { amount: 120, customer: 'c-7' }, status: 'running', steps: 1, step: 'charge', waiting: 'wait approve',
      events: [
        [100, 'step', { n: 1, step: 'charge' }],
        [600, 'stepRetry', { n: 1, attempt: 1, error: busy, retryAt: NOW - 95 * S + 2600 }],
        [2600, 'stepAttempt', { n: 1, attempt: 2, cause: 'retry' }],
        [3000, 'stepDone', { n: 1, result: { charged: 120, receipt: 'r-5531' } }],
        [3100, 'sleep', { n: 2, timer: 'cool-off', fireAt: NOW - 95 * S + 33 * S }],
        [33 * S, 'timerFired', { n: 2 }],
        [33 * S + 100, 'wait', { n: 3, signal: 'approve', timeoutAt: NOW + 10 * MIN }],
      ],
      effects: [['charge', 2, { type: 'completed', output: { charged: 120, receipt: 'r-5531' } }, 3000]],
      timers: [['signal/approve', NOW + 10 * MIN]],
    }),
    workflow({
      id: 'order-1043', n: 1043, type: 'order', startAt: NOW - 12 * S, input: { amount: 80, customer: 'c-9' }, status: 'running', waiting: 'retry charge',
      events: [
        [50, 'step', { n: 1, step: 'charge' }],
        [1200, 'stepRetry', { n: 1, attempt: 1, error: busy, retryAt: NOW + 20 * S }],
      ],
      effects: [['charge', 1, { type: 'failed', error: 'the card network is busy' }, 1200]],
      timers: [['retry/charge', NOW + 20 * S]],
    }),
    workflow({
      id: 'report-7', n: 7, type: 'report', startAt: NOW - 40 * MIN, input: { period: '2026-03' }, status: 'running', steps: 1, step: 'collect', waiting: 'sleep nightly',
      events: [
        [200, 'step', { n: 1, step: 'collect' }],
        [4 * S, 'stepDone', { n: 1, result: { rows: 1834 } }],
        [4 * S + 100, 'sleep', { n: 2, timer: 'nightly', fireAt: NOW + 2 * 60 * MIN }],
      ],
      effects: [['collect', 1, { type: 'completed', output: { rows: 1834 } }, 4 * S]],
      timers: [['sleep/nightly', NOW + 2 * 60 * MIN]],
    }),
    workflow({
      id: 'order-1041', n: 1041, type: 'order', startAt: NOW - 20 * MIN, closeAt: NOW - 20 * MIN + 8 * S, input: { amount: 45, customer: 'c-3' }, status: 'completed', steps: 2, step: 'ship',
      events: [
        [100, 'step', { n: 1, step: 'charge' }],
        [900, 'stepDone', { n: 1, result: { charged: 45 } }],
        [1000, 'wait', { n: 2, signal: 'approve' }],
        [6 * S, 'signal', { signal: 'approve', payload: { by: 'ana' }, signalId: 'approve-1041' }],
        [6 * S + 100, 'step', { n: 3, step: 'ship' }],
        [7900, 'stepDone', { n: 3, result: { label: 'label.txt' } }],
        [8 * S, { type: 'completed', data: { result: { approvedBy: 'ana', shipped: true } } }],
      ],
      effects: [['charge', 1, { type: 'completed', output: { charged: 45 } }, 900], ['ship', 1, { type: 'completed', output: { label: 'label.txt' } }, 7900]],
    }),
    workflow({
      id: 'order-1040', n: 1040, type: 'order', startAt: NOW - 50 * MIN, closeAt: NOW - 50 * MIN + 7 * S, input: { amount: 300, customer: 'c-1' }, status: 'failed', failedStep: 'charge',
      failureReason: 'step charge failed after 3 attempts: the card was declined',
      events: [
        [100, 'step', { n: 1, step: 'charge' }],
        [500, 'stepRetry', { n: 1, attempt: 1, error: busy, retryAt: NOW - 50 * MIN + 2500 }],
        [2500, 'stepAttempt', { n: 1, attempt: 2, cause: 'retry' }],
        [2900, 'stepRetry', { n: 1, attempt: 2, error: busy, retryAt: NOW - 50 * MIN + 6900 }],
        [6900, 'stepAttempt', { n: 1, attempt: 3, cause: 'retry' }],
        [6950, 'stepFailed', { n: 1, attempts: 3, error: { name: 'Error', message: 'the card was declined' } }],
        [7 * S, { type: 'failed', reason: 'step charge failed after 3 attempts: the card was declined', data: { error: { name: 'RunStoreError', code: 'STEP_FAILED', message: 'step charge failed after 3 attempts: the card was declined' } } }],
      ],
      effects: [['charge', 3, { type: 'failed', error: 'the card was declined' }, 6950]],
    }),
    workflow({
      id: 'refund-88', n: 88, type: 'refund', startAt: NOW - 3 * 60 * MIN, closeAt: NOW - 3 * 60 * MIN + 90 * S, input: { order: 'order-1031', amount: 60 }, status: 'failed', failedStep: 'refund',
      failureReason: 'step refund of workflow refund-88 may or may not have run',
      events: [
        [100, 'step', { n: 1, step: 'refund' }],
        [90 * S, 'stepFailed', { n: 1, attempts: 1, error: { name: 'RunStoreError', code: 'OUTCOME_UNKNOWN', message: 'step refund of workflow refund-88 may or may not have run: the engine stopped during attempt 1, and the step is marked once' } }],
        [90 * S, { type: 'failed', reason: 'step refund of workflow refund-88 may or may not have run', data: {} }],
      ],
      effects: [['refund', 1, { type: 'outcomeUnknown' }, 90 * S]],
    }),
    workflow({
      id: 'order-1039', n: 1039, type: 'order', startAt: NOW - 2 * 60 * MIN, closeAt: NOW - 2 * 60 * MIN + 45 * S, input: { amount: 15, customer: 'c-2' }, status: 'cancelled', steps: 1, step: 'charge',
      events: [
        [100, 'step', { n: 1, step: 'charge' }],
        [700, 'stepDone', { n: 1, result: { charged: 15 } }],
        [800, 'wait', { n: 2, signal: 'approve' }],
        [45 * S - 100, 'cancelRequested', { reason: 'customer asked' }],
        [45 * S, { type: 'cancelled', data: { reason: 'customer asked' } }],
      ],
      effects: [['charge', 1, { type: 'completed', output: { charged: 15 } }, 700]],
    }),
  ];
}

/** Outbox rows: pending, claimed, done, and a dead letter. */
async function outbox(store) {
  const row = (key, workflowId, activityType, input, visibleAfter, taskQueue) => ({
    dispatchKey: key, workflowId, ordinal: 0, activityType, input: encode(input), visibleAfter, namespace: 'app', taskQueue,
  });
  await store.insertOutbox([
    row('mail/1042', 'order-1042', 'mail.send', '{"to":"c-7@example.com","template":"charged"}', NOW + 5 * MIN, 'mail'),
    row('mail/1041', 'order-1041', 'mail.send', '{"to":"c-3@example.com","template":"shipped"}', NOW - 19 * MIN, 'mail-done'),
    row('sms/1041', 'order-1041', 'sms.send', '{"to":"+15550100","text":"shipped"}', NOW - 19 * MIN, 'sms'),
    row('hook/1040', 'order-1040', 'webhook.post', '{"url":"https://hooks.example.com/orders","status":"failed"}', NOW - 49 * MIN, 'hooks'),
  ]);
  const claim = async (taskQueue) => (await store.claimOutbox(NOW - 2 * MIN, 1, { scope: { namespace: 'app', taskQueue } }))[0];
  const done = await claim('mail-done');
  await store.completeOutbox(done.dispatchKey, done.claimToken);
  await claim('sms');
  const dead = await claim('hooks');
  await store.failOutbox(dead.dispatchKey, dead.claimToken, 'HTTP 410 Gone: the endpoint was removed');
}

/** Artifacts of two workflows: a text label and a JSON receipt. */
function artifacts() {
  const put = (scope, name, mediaType, text, now) => ({ op: 'putArtifact', artifact: { scope, name, mediaType, bytes: encode(text) }, now });
  return [
    put('order-1041', 'label.txt', 'text/plain', 'ship 45 to c-3\napproved by ana', NOW - 20 * MIN + 7900),
    put('order-1042', 'receipt.json', 'application/json', '{"receipt":"r-5531","amount":120}', NOW - 92 * S),
  ];
}

const frames = (n) => new Promise((resolve) => {
  const step = (left) => (left ? requestAnimationFrame(() => step(left - 1)) : resolve());
  step(n);
});

/** Waits until `check()` holds (checked at each frame), or throws after 10 s. */
async function until(check, what) {
  const deadline = performance.now() + 10_000;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`${what} not shown in 10 s`);
    await frames(1);
  }
}

/**
 * Opens memory store `name`, seeds it, fixes the clock, mounts the inspector and writes what
 * the inspector shows only once it hears of it: a checkpoint's two revisions and a
 * conversation. Resolves once all of it shows.
 */
export async function mount({ name }) {
  const store = await RunStore.open(name, { persistence: 'memory' });
  await store.commit({ operations: [...workflows().flat(), ...artifacts()] });
  await outbox(store);
  fixClock(NOW);
  const element = document.createElement('runstore-inspector');
  // Light whatever the system prefers.
  element.setAttribute('theme', 'light');
  element.store = store;
  document.body.append(element);
  await element.ready;
  // No caret blinking in a focused field, no transition caught halfway.
  const still = document.createElement('style');
  still.textContent = '*, *::before, *::after { animation: none !important; transition: none !important; caret-color: transparent !important; }';
  element.shadowRoot.append(still);
  const root = element.shadowRoot;
  const checkpoint = (revision, state) => store.compareAndSwapCheckpoint({ checkpointId: 'plan-1042', runId: runIdOf(1042), revision, state, updatedAt: NOW - 60 * S + revision * 30 * S }, revision ? revision - 1 : null);
  // The checkpoints view reads each revision as it hears of it; the first one must be read
  // before the second replaces it, for the view to show what changed.
  await checkpoint(0, { step: 1, plan: ['search'], note: 'draft' });
  await until(() => /revision 0/.test(root.querySelector('[data-view="checkpoints"] li')?.textContent ?? ''), 'revision 0');
  await checkpoint(1, { step: 2, plan: ['search', 'summarize'] });
  await until(() => /revision 1/.test(root.querySelector('[data-view="checkpoints"] li')?.textContent ?? ''), 'revision 1');
  await store.saveConversation({ conversationId: 'chat-7', revision: 0, formatVersion: 1, state: encode('user: where is my order?\nagent: order-1042 waits for approval'), updatedAt: NOW - 30 * S }, null);
  window.inspected = { store, element };
}

/**
 * Shows `view` (a run when `workflowId` is given) and resolves once it shows what it read,
 * two frames later.
 */
export async function show(view, workflowId = null) {
  const { element } = window.inspected;
  const root = element.shadowRoot;
  if (workflowId) {
    element.select(workflowId);
    await until(() => root.querySelector(`[data-run-id="${workflowId}"]`) && root.querySelector('.run [data-artifact], .run h3'), `run ${workflowId}`);
  } else {
    element.view = view;
  }
  const panel = root.querySelector(`[data-view="${view}"]`);
  await until(() => panel.textContent.trim() && !/reading…|Reading /.test(panel.textContent), `the ${view} view`);
  if (view === 'checkpoints') {
    root.querySelector('[data-action="open-checkpoint"][data-arg="plan-1042"]').click();
    await until(() => root.querySelectorAll('[data-diff]').length === 3, 'the checkpoint diff');
  }
  if (view === 'conversations') await until(() => root.querySelector('[data-conversation="chat-7"] pre'), 'the conversation');
  if (view === 'store') await until(() => panel.querySelectorAll('.kv dt').length === 4, 'the store');
  if (view === 'workflows') await until(() => root.querySelectorAll('.row[data-workflow-id]').length === 7, 'the workflow list');
  await frames(2);
}

/** Whether `el` or an ancestor up to the shadow root scrolls or clips sideways on purpose. */
function inScroller(el, root) {
  for (let at = el; at; at = at.parentElement) {
    if (at === root) return false;
    const { overflowX } = getComputedStyle(at);
    if (overflowX !== 'visible') return true;
  }
  return false;
}

/**
 * What keeps the view shown from reading well: text outside the element's box (sideways) or
 * over other text, outside scroll containers; the element wider than its own box. Each entry
 * names the text. Resolves to [] when there is none.
 */
export function unreadable() {
  const { element } = window.inspected;
  const root = element.shadowRoot;
  const box = element.getBoundingClientRect();
  const found = [];
  if (element.scrollWidth > element.clientWidth + 1) found.push(`the element scrolls sideways: ${element.scrollWidth} > ${element.clientWidth}`);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const parent = node.parentElement;
    if (!text || !parent || parent.closest('[hidden], style, option, dialog') || inScroller(parent, root)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const rect of range.getClientRects()) {
      if (!rect.width || !rect.height) continue;
      if (rect.left < box.left - 1 || rect.right > box.right + 1) found.push(`"${text.slice(0, 40)}" is outside the element (${Math.round(rect.left)}..${Math.round(rect.right)} of ${Math.round(box.left)}..${Math.round(box.right)})`);
      texts.push({ text, rect });
    }
  }
  // Text over text: two lines of text whose boxes overlap by more than a pixel both ways.
  for (let i = 0; i < texts.length; i++) {
    for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i].rect;
      const b = texts[j].rect;
      const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (x > 1 && y > 1) found.push(`"${texts[i].text.slice(0, 40)}" overlaps "${texts[j].text.slice(0, 40)}"`);
    }
  }
  return found;
}
