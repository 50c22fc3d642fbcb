// runstore/inspector on a sync server's namespace, in the engine RUNSTORE_ENGINE names, against
// the runstore-sync binary (RUNSTORE_SYNC_BIN) on a free port. One page of the test app runs
// `approval` workflows with runstore/workflow and pushes them (store.sync); another shows the
// namespace with only `syncServerStore` and <runstore-inspector>
// (tests/app/src/inspector-sync-page.js). The server runs on a SQLite file (on PostgreSQL when
// RUNSTORE_PG_URL names a database). The list and a run's timeline show what was pushed,
// a later push shows up live, no action that writes is offered, removing the element ends the
// copy's long-poll, a token the server refuses shows as UNAUTHORIZED, and another store
// handed to the element starts its Sync view afresh.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINE, useTestApp } from './browser.mjs';
import { countIn, openInspectorPage, textIn, waitCount } from './inspector-helpers.mjs';
import { freePort, startSyncServer, syncServerSettings } from './sync-server.mjs';

const app = useTestApp();
const title = (text) => `${text} (${ENGINE})`;
const TOKEN = 'inspector-token';
const NAMESPACE = 'team';
let server;
let target;
let pusher;
let viewer;
const problems = [];

before(async () => {
  const settings = syncServerSettings(await freePort(), { [TOKEN]: [NAMESPACE], 'other-token': ['elsewhere'] }, `inspector_sync_${process.pid}`);
  server = await startSyncServer(settings);
  target = { url: settings.url, token: TOKEN, namespace: NAMESPACE };
});

after(async () => {
  await server?.stop('SIGTERM');
  assert.deepEqual(problems, []);
});

const openApp = () => openInspectorPage(app, problems);

/** Calls `name(arg)` of tests/app/src/inspector-sync-page.js in `page`. */
const call = (page, name, arg) => page.evaluate(async ([name, arg]) => (await window.inspectorSyncPage())[name](arg), [name, arg]);

/** The events of the run shown, as the inspector lists them. */
const shownEvents = (page) =>
  page.evaluate(() => [...document.querySelector('runstore-inspector').shadowRoot.querySelectorAll('[data-event]')].map((r) => r.dataset.event));

/** Every control that would write: none may be offered on a server's copy. */
const WRITES = ['signal', 'cancel', 'retry', 'requeue', 'purge'].map((a) => `[data-action="${a}"]`).join(', ');

test(title('shows the workflows pushed to the namespace and a run as its timeline, read-only'), async () => {
  pusher = await openApp();
  await call(pusher, 'openPusher', target);
  assert.deepEqual(await call(pusher, 'startAndPush', ['order-0', 'order-1']), { workflows: 2, events: 16 });
  viewer = await openApp();
  await call(viewer, 'mountServer', target);
  await waitCount(viewer, '.row[data-workflow-id][data-status="running"]', 2);
  assert.match(await textIn(viewer, '[data-count=""]'), /^2$/);
  await viewer.click('runstore-inspector .row[data-workflow-id="order-1"]');
  await waitCount(viewer, '[data-run-id="order-1"]', 1);
  await waitCount(viewer, '.span-row[data-span="wait approve"][data-span-status="waiting"]', 1);
  // The journal event for event as the pushing store has it, and the timeline folded from it.
  assert.deepEqual(await shownEvents(viewer), await call(pusher, 'events', 'order-1'));
  assert.deepEqual(await shownEvents(viewer), ['started', 'step', 'stepRetry', 'stepAttempt', 'stepDone', 'sleep', 'timerFired', 'wait']);
  assert.equal(await countIn(viewer, '.span-row[data-span="step charge"] .bar.attempt.failed'), 1);
  assert.equal(await countIn(viewer, '.span-row[data-span="step charge"] .bar.attempt.done'), 1);
  assert.equal(await countIn(viewer, '[data-server-copy]'), 1);
  // A running workflow, yet nothing that writes; the export stays (it changes nothing on the server).
  assert.equal(await countIn(viewer, WRITES), 0);
  assert.equal(await countIn(viewer, '[data-action="export-run"]'), 1);
  // Only the views a journal fills; the Store view says what the store is, and offers no purge.
  const tabs = await viewer.evaluate(() => [...document.querySelector('runstore-inspector').shadowRoot.querySelectorAll('[role="tab"]:not([hidden])')].map((t) => t.dataset.tab));
  assert.deepEqual(tabs, ['workflows', 'changes', 'sync', 'store']);
  await viewer.click('runstore-inspector [data-tab="store"]');
  await viewer.waitForFunction(() => /2 workflows in the visibility index/.test(document.querySelector('runstore-inspector').shadowRoot.querySelector('#panel-store').textContent));
  assert.match(await textIn(viewer, '#panel-store'), new RegExp(`read-only copy of namespace ${NAMESPACE} at ${target.url}`));
  assert.equal(await countIn(viewer, WRITES), 0);
  assert.equal(await countIn(viewer, '[data-action="export-store"]'), 1);
  // The store handed to the inspector has no write method at all.
  assert.deepEqual(await viewer.evaluate(() => ['append', 'commit', 'upsertVisibility', 'purgeWorkflows', 'insertOutbox'].filter((m) => m in window.serverView.store)), []);
  await viewer.click('runstore-inspector [data-tab="workflows"]');
});

test(title('follows the namespace live: a workflow pushed later appears, a run that ends shows it'), async () => {
  assert.equal((await call(pusher, 'startAndPush', ['order-2'])).workflows, 1);
  await waitCount(viewer, '.row[data-workflow-id="order-2"][data-status="running"]', 1);
  assert.equal((await call(pusher, 'approveAndPush', 'order-1')).workflows, 1);
  await waitCount(viewer, '.row[data-workflow-id="order-1"][data-status="completed"]', 1);
  // The run shown (order-1) reads what was pulled.
  await viewer.waitForFunction(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('[data-event="completed"]') !== null);
  assert.deepEqual(await shownEvents(viewer), await call(pusher, 'events', 'order-1'));
  assert.equal(await countIn(viewer, WRITES), 0);
  // The Sync view: this copy's own pulls, no failure.
  await viewer.click('runstore-inspector [data-tab="sync"]');
  await waitCount(viewer, '[data-sync-state="synced"]', 1);
  assert.match(await textIn(viewer, '#panel-sync'), new RegExp(`namespace ${NAMESPACE}`));
  await viewer.click('runstore-inspector [data-tab="workflows"]');
});

test(title('the copy follows the server while the inspector is on the page: removed, its long-poll ends; stop() ends it for good'), async () => {
  const openRequests = () => viewer.evaluate(() => window.serverView.openRequests());
  await viewer.waitForFunction(() => window.serverView.openRequests() === 1);
  await viewer.evaluate(() => window.serverView.element.remove());
  await viewer.waitForFunction(() => window.serverView.openRequests() === 0);
  // Pushed while no inspector shows the copy: pulled once one does again.
  assert.equal((await call(pusher, 'startAndPush', ['order-3'])).workflows, 1);
  await viewer.evaluate(() => document.body.append(window.serverView.element));
  await waitCount(viewer, '.row[data-workflow-id="order-3"][data-status="running"]', 1);
  await viewer.waitForFunction(() => window.serverView.openRequests() === 1);
  await viewer.evaluate(() => window.serverView.store.stop());
  assert.equal(await openRequests(), 0);
  // What was pulled stays readable.
  assert.equal(await viewer.evaluate(async () => (await window.serverView.store.countVisibility({}))), 4);
});

test(title('a token the server refuses shows as UNAUTHORIZED in the toast and the Sync view'), async () => {
  for (const token of ['wrong-token', 'other-token']) {
    const page = await openApp();
    await call(page, 'mountServer', { ...target, token });
    await page.waitForFunction(() => /^UNAUTHORIZED: /.test(document.querySelector('runstore-inspector').shadowRoot.querySelector('.toast').textContent), undefined, { timeout: 10_000 });
    await page.click('runstore-inspector [data-tab="sync"]');
    await waitCount(page, '[data-sync-state="error"]', 1);
    assert.match(await textIn(page, '#panel-sync'), /UNAUTHORIZED: unauthorized/);
    assert.equal(await countIn(page, '.row[data-workflow-id]'), 0);
    await page.evaluate(() => window.serverView.store.stop());
    await page.close();
  }
});

test(title('given another store, the Sync view tells that store\'s sync alone'), async () => {
  const page = await openApp();
  await call(page, 'mountServer', target);
  await page.click('runstore-inspector [data-tab="sync"]');
  await waitCount(page, '[data-sync-state="synced"]', 1);
  const pulled = async () => Number(/([\d,]+) events? pulled/.exec(await textIn(page, '#panel-sync'))?.[1].replace(/,/g, ''));
  await page.waitForFunction(() => /[1-9][\d,]* events? pulled/.test(document.querySelector('runstore-inspector').shadowRoot.querySelector('#panel-sync').textContent));
  const first = await pulled();
  // A second copy of the same namespace pulls the same events: the view counts them once.
  await call(page, 'replaceServer', target);
  await waitCount(page, '[data-sync-state="synced"]', 1);
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(await pulled(), first);
  await page.evaluate(() => window.serverView.store.stop());
  await page.close();
});
