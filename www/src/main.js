// The demo page: opens the store, starts the workflow engine (in the leader tab it resumes
// whatever the last page left running) and keeps the inspector up to date.

import './style.css';
import { WorkflowEngine } from 'runstore/workflow';
import { html } from './html.js';
import { Inspector } from './inspector.js';
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
  const inspector = new Inspector(document.getElementById('inspector'), store, engine);
  let recoveryShown = null;
  const updateRecovery = () => {
    clearTimeout(recoveryShown);
    recoveryShown = setTimeout(() => recovery.summary(engine).then((found) => showRecovery(found, held), console.error), 50);
  };
  // Every tab's inspector follows every tab's commits.
  store.subscribe(null, (change) => {
    inspector.refreshSoon();
    if (change.areas.includes('checkpoints')) agents.render().catch((error) => console.error(error));
    if (!engine.running || !change.areas.includes('journal')) return;
    if (change.workflowIds.some((id) => recovery.active.includes(id))) updateRecovery();
  });
  // With a sync server, the leader tab also syncs (live) and every tab shows how it goes.
  const syncConfig = await loadSyncConfig();
  const sync = syncConfig && new SyncPanel(store, syncConfig, document.getElementById('sync'));
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
  await inspector.start();
  window.demo = { store, engine, agents, worldLedger }; // for the console: try `await demo.engine.describe(id)`
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
