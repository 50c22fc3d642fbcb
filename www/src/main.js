// The demo page: opens the store, starts the runner (which resumes whatever the last page
// left running) and keeps the inspector up to date.

import './style.css';
import { Inspector } from './inspector.js';
import { LangGraphAgents } from './langgraph.js';
import { Runner } from './runner.js';
import { STORE_NAME, deleteStore, mediumName, openStore } from './store.js';
import { SyncPanel, loadSyncConfig } from './sync.js';
import { setUpTransfer } from './transfer.js';
import { resetWorld, worldLedger } from './world.js';

const LOADS_KEY = 'runstore-demo:page-loads';
const PROFILE_KEY = 'runstore-demo:profile';
const banner = document.getElementById('banner');

/** This browser profile's id: its runner drives the workflows started with it. */
function profileId() {
  let id = localStorage.getItem(PROFILE_KEY);
  if (!id) {
    id = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('');
    localStorage.setItem(PROFILE_KEY, id);
  }
  return id;
}

function showBanner(kind, html) {
  banner.className = `banner ${kind}`;
  banner.innerHTML = html;
}

function storeError(error) {
  if (error.code === 'BUSY') {
    return `<strong>The store is open in another tab (BUSY).</strong> runstore keeps its database
      in one tab at a time. Close the other tab of this demo, then <button id="retry">try again</button>.`;
  }
  return `<strong>The store could not be opened (${error.code ?? 'error'}).</strong> ${error.message}`;
}

function showRecovery({ resumed, rearmed, interrupted }, pageLoad, medium) {
  const held = `Store <code>${STORE_NAME}</code> on ${medium} · durability <code>full</code> · page load #${pageLoad}`;
  if (resumed > 0) {
    showBanner(
      'recovered',
      `${held}. <strong>Recovered:</strong> ${resumed} unfinished workflow${resumed === 1 ? '' : 's'} resumed from the journal ·
       ${rearmed} outbox claim${rearmed === 1 ? '' : 's'} re-armed · ${interrupted} interrupted effect${interrupted === 1 ? '' : 's'} marked outcome unknown.`,
    );
  } else {
    showBanner('info', `${held}. Nothing was left running. Start a workflow, then reload the tab while it runs.`);
  }
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

  let inspector;
  const agents = new LangGraphAgents(store, document.getElementById('langgraph'));
  const runner = new Runner(store, { pageLoad, origin: profileId(), onChange: () => inspector?.refreshSoon() });
  inspector = new Inspector(document.getElementById('inspector'), store, runner);
  // Every tab's inspector follows every tab's commits; the leader's runner adopts workflows
  // that other tabs start.
  store.subscribe(null, (change) => {
    inspector.refreshSoon();
    if (change.areas.includes('checkpoints')) agents.render().catch((error) => console.error(error));
    if (change.areas.includes('journal')) runner.adopt(change.workflowIds);
  });
  // With a sync server, the leader tab also syncs (live) and every tab shows how it goes.
  const syncConfig = await loadSyncConfig();
  const sync = syncConfig && new SyncPanel(store, syncConfig, document.getElementById('sync'));
  // Only the leader tab runs workflows and the outbox; when it goes, the next tab takes over.
  const lead = async (isLeader) => {
    document.body.dataset.role = isLeader ? 'leader' : 'follower';
    sync?.lead(isLeader);
    if (!isLeader) return runner.stop();
    await runner.start();
    await agents.resume();
    showRecovery(runner.recovery, pageLoad, mediumName(store));
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
      const id = await runner.startWorkflow(button.dataset.start);
      inspector.select(id);
    });
  }
  const startAgent = document.getElementById('start-langgraph');
  startAgent.disabled = false;
  startAgent.addEventListener('click', () => agents.start());
  agents.render().catch((error) => console.error(error));
  inspector.start();
  window.demo = { store, runner, agents, worldLedger }; // for the console: try `await demo.store.listActive()`
  document.body.dataset.store = 'ready';

  setUpTransfer(store, (error) =>
    showBanner('error', `<strong>${error.code ?? 'Error'}:</strong> ${error.message}`),
  );

  const reset = document.getElementById('reset');
  reset.disabled = false;
  reset.onclick = async () => {
    if (!confirm('Delete every workflow and the services’ memory?')) return;
    await deleteStore(store);
    resetWorld();
    localStorage.removeItem(LOADS_KEY);
    // A new profile id: workflows that come back from a sync server are then another's, shown
    // but not run again here.
    localStorage.removeItem(PROFILE_KEY);
    location.reload();
  };
}

document.getElementById('reload').onclick = () => location.reload();
main().catch((error) => {
  console.error(error);
  showBanner('error', `<strong>The demo stopped:</strong> ${error.message}`);
});
