// The demo page: opens the store, starts the workflow engine (in the leader tab it resumes
// whatever the last page left running), and shows the store in the package's inspector
// (<runstore-inspector>, which follows every commit itself) beside the demo's own cards.

import './style.css';
import 'runstore/inspector';
import { WorkflowEngine } from 'runstore/workflow';
import { onApprove, renderApprovals, renderServices } from './cards.js';
import { html } from './html.js';
import { LangGraphAgents } from './langgraph.js';
import { Recovery, describeRecovery } from './recovery.js';
import { STORE_NAME, deleteStore, mediumName, openStore } from './store.js';
import { SyncPanel, loadSyncConfig } from './sync.js';
import { setUpTransfer } from './transfer.js';
import { WORKFLOWS, newWorkflowId } from './workflows.js';
import { resetWorld, worldLedger } from './world.js';

const LOADS_KEY = 'runstore-demo:page-loads';
const banner = document.getElementById('banner');

function showBanner(kind, markup) {
  banner.className = `banner ${kind}`;
  banner.innerHTML = markup;
}

function storeError(error) {
  if (error.code === 'BUSY') {
    return `<strong>The store is open in another tab (BUSY).</strong> runstore keeps its database
      in one tab at a time. Close the other tab of this demo, then <button id="retry">try again</button>.`;
  }
  return `<strong>The store could not be opened (${error.code ?? 'error'}).</strong> ${error.message}`;
}

function showRecovery(found, held) {
  const recovered = describeRecovery(found);
  if (recovered) showBanner('recovered', html`${held}. <strong>Recovered:</strong> ${recovered}.`);
  else showBanner('info', `${held}. Nothing was left running. Start a workflow, then reload the tab while it runs.`);
}

async function main() {
  const pageLoad = Number(localStorage.getItem(LOADS_KEY) ?? 0) + 1;
  localStorage.setItem(LOADS_KEY, String(pageLoad));

  let store;
  try {
    store = await openStore({
      onRetry: (error) => {
        console.info(`opening the store: ${error.message}; trying again`);
        showBanner('info', 'The store is still held; trying again…');
      },
    });
  } catch (error) {
    document.body.dataset.store = error.code ?? 'error';
    showBanner('error', storeError(error));
    document.getElementById('retry')?.addEventListener('click', () => location.reload());
    return;
  }
  const held = html`Store <code>${STORE_NAME}</code> on ${mediumName(store)} · durability <code>full</code> · page load #${pageLoad}`;

  // What is unfinished is noted before the engine resumes it (in the leader tab it does so as it starts).
  const recovery = new Recovery(store);
  if (store.isLeader) await recovery.begin();
  const engine = await WorkflowEngine.start(store, { workflows: Object.values(WORKFLOWS).map((w) => w.workflow) });
  const agents = new LangGraphAgents(store, document.getElementById('langgraph'));
  const inspector = document.getElementById('inspector');
  for (const element of document.querySelectorAll('runstore-inspector')) Object.assign(element, { store, engine });
  const approvals = document.getElementById('approvals');
  const services = document.getElementById('services');
  onApprove(approvals, engine);
  // The cards read the store after commits, and the services' memory (outside the store) now and then.
  let cardsDrawn = null;
  const drawCards = () => {
    cardsDrawn ??= Promise.all([renderApprovals(approvals, store, engine), renderServices(services, store)])
      .catch((error) => console.error(error))
      .finally(() => (cardsDrawn = null));
    return cardsDrawn;
  };
  let recoveryShown = null;
  const updateRecovery = () => {
    clearTimeout(recoveryShown);
    recoveryShown = setTimeout(() => recovery.summary(engine).then((found) => showRecovery(found, held), console.error), 50);
  };
  // Every tab's cards follow every tab's commits (the inspector follows them itself).
  store.subscribe(null, (change) => {
    drawCards();
    if (change.areas.includes('checkpoints')) agents.render().catch((error) => console.error(error));
    if (!engine.running || !change.areas.includes('journal')) return;
    if (change.workflowIds.some((id) => recovery.active.includes(id))) updateRecovery();
  });
  // With a sync server, the leader tab also syncs (live) and every tab shows how it goes.
  const syncConfig = await loadSyncConfig();
  const sync = syncConfig && new SyncPanel(store, syncConfig, document.getElementById('sync'), inspector.syncProgress);
  if (syncConfig) inspector.sync = { url: syncConfig.url, namespace: syncConfig.namespace ?? 'default' };
  // Only the leader tab's engine runs workflows; when that tab goes, the next one takes over.
  // (A tab that takes over notes what is unfinished before its engine has recorded anything:
  // the engine's first commit comes after several reads that it asks for after this listener's.)
  const lead = async (isLeader) => {
    document.body.dataset.role = isLeader ? 'leader' : 'follower';
    sync?.lead(isLeader);
    if (!isLeader) return;
    if (!recovery.since) await recovery.begin();
    recovery.threads = await agents.resume();
    showRecovery(await recovery.summary(engine), held);
  };
  store.onLeaderChange((isLeader) => lead(isLeader).catch((error) => console.error(error)));
  await lead(store.isLeader);
  if (!store.isLeader) {
    showBanner('info', `Store <code>${STORE_NAME}</code> on ${mediumName(store)}, shared with the tab that runs the workflows.
      Workflows started here run there; when that tab closes, this one takes over.`);
  }

  for (const button of document.querySelectorAll('[data-start]')) {
    button.disabled = false;
    button.addEventListener('click', async () => {
      const { workflow, input } = WORKFLOWS[button.dataset.start];
      const n = await store.countVisibility({ workflowType: workflow.name });
      const run = await engine.start(workflow, { id: newWorkflowId(workflow.name), input: input(n) });
      inspector.select(run.workflowId);
    });
  }
  const startAgent = document.getElementById('start-langgraph');
  startAgent.disabled = false;
  startAgent.addEventListener('click', () => agents.start());
  await agents.render();
  // The board shows once its cards have content (an empty card would flash first).
  await Promise.all([inspector.ready, drawCards()]);
  document.getElementById('board').hidden = false;
  setInterval(drawCards, 1000);
  window.demo = { store, engine, agents, worldLedger, inspector }; // for the console: try `await demo.engine.describe(id)`
  document.body.dataset.store = 'ready';

  setUpTransfer(store, (error) =>
    showBanner('error', `<strong>${error.code ?? 'Error'}:</strong> ${error.message}`),
  );

  const reset = document.getElementById('reset');
  reset.disabled = false;
  reset.onclick = async () => {
    if (!confirm('Delete every workflow and the services’ memory?')) return;
    await engine.stop();
    // A new store has a new device id: workflows that come back from a sync server are then
    // another device's, shown but not run again here.
    await deleteStore(store);
    resetWorld();
    localStorage.removeItem(LOADS_KEY);
    location.reload();
  };
}

document.getElementById('reload').onclick = () => location.reload();
main().catch((error) => {
  console.error(error);
  showBanner('error', `<strong>The demo stopped:</strong> ${error.message}`);
});
