// Sync with a runstore sync server, when the demo is served with one (`npm start -- --sync`
// writes `sync.json` beside the page: { url, token, namespace }). Only the leader tab syncs
// (one live `store.sync` per store); every tab shows its status. The built `sync.json`
// (www/public) has no url: then, as without the file, the demo runs on its own and shows
// nothing of this.

import { html } from './html.js';

const STATUS_KEY = 'runstore-demo:sync-status';
/** Tells the other tabs of this profile the leader's sync status. */
const channel = new BroadcastChannel(STATUS_KEY);

/** The server's settings from `sync.json`, or null when the demo is served without one. */
export async function loadSyncConfig() {
  try {
    const response = await fetch(new URL('sync.json', location.href), { cache: 'no-store' });
    if (!response.ok) return null;
    const config = await response.json();
    return typeof config?.url === 'string' && typeof config?.token === 'string' ? config : null;
  } catch {
    return null; // not there (a static host may answer with the page itself): no sync
  }
}

/** Live sync of `store` while this tab leads, and its status shown in `element`. */
export class SyncPanel {
  #store;
  #config;
  #element;
  #abort = null;
  #status;
  #onProgress;

  /** `onProgress` is told each of the sync's progress reports too (the inspector's sync view). */
  constructor(store, config, element, onProgress = () => {}) {
    this.#onProgress = onProgress;
    this.#store = store;
    this.#config = config;
    this.#element = element;
    this.#status = { state: 'waiting', lastSync: null, pushed: 0, pulled: 0, conflicts: [], error: null };
    // The leader answers a new tab's 'ask' with its status, and sends it after each change.
    channel.onmessage = ({ data }) => {
      if (data === 'ask') {
        if (this.#abort) channel.postMessage(this.#status);
      } else if (!this.#abort) {
        this.#show(data);
      }
    };
    channel.postMessage('ask');
    window.addEventListener('online', () => this.#render());
    window.addEventListener('offline', () => this.#render());
    element.hidden = false;
    this.#render();
  }

  /** Starts syncing (this tab leads) or stops (another tab does). */
  lead(isLeader) {
    if (isLeader && !this.#abort) this.#start();
    if (!isLeader && this.#abort) {
      this.#abort.abort();
      this.#abort = null;
    }
  }

  #start() {
    const abort = new AbortController();
    this.#abort = abort;
    const { url, token, namespace = 'default' } = this.#config;
    this.#store
      .sync({ url, token, namespace, live: true, signal: abort.signal, onProgress: (event) => this.#progress(event) })
      .catch((error) => this.#progress({ type: 'error', error }));
  }

  #progress(event) {
    this.#onProgress(event);
    const status = this.#status;
    if (event.type === 'pushed') status.pushed += event.events;
    if (event.type === 'pulled') status.pulled += event.events;
    if (event.type === 'synced') {
      Object.assign(status, { state: 'synced', lastSync: Date.now(), error: null });
      status.conflicts = event.summary.conflicts.map((c) => ({ workflowId: c.workflowId, localHead: c.localHead, serverHead: c.serverHead }));
    }
    if (event.type === 'error') Object.assign(status, { state: 'error', error: { code: event.error?.code ?? 'ERROR', message: event.error?.message ?? String(event.error) } });
    channel.postMessage(status);
    this.#render();
  }

  #show(status) {
    this.#status = status;
    this.#render();
  }

  #render() {
    const s = this.#status;
    const offline = !navigator.onLine || s.error?.code === 'UNAVAILABLE';
    const state = offline ? 'offline' : s.state;
    this.#element.dataset.sync = state;
    this.#element.dataset.pushed = s.pushed;
    this.#element.dataset.pulled = s.pulled;
    const when = s.lastSync ? new Date(s.lastSync).toLocaleTimeString() : 'not yet';
    const label = { synced: 'Synced', waiting: 'Connecting', error: 'Sync error', offline: 'Offline' }[state];
    const conflicts = s.conflicts.length
      ? html`<span class="bad" data-sync-conflicts="${s.conflicts.length}">${s.conflicts.length} conflict${s.conflicts.length === 1 ? '' : 's'}: ${s.conflicts.map((c) => `${c.workflowId} (here ${c.localHead}, server ${c.serverHead})`).join(', ')}</span>`
      : html`<span data-sync-conflicts="0">no conflicts</span>`;
    const problem = s.error ? html` · <span class="dim">${s.error.code}: ${s.error.message}${offline ? '; retrying, changes made here sync when it is back' : ''}</span>` : '';
    this.#element.innerHTML = html`<strong>${label}</strong> with <code>${this.#config.url}</code>
      (namespace <code>${this.#config.namespace ?? 'default'}</code>) · last sync ${when} ·
      pushed <b>${s.pushed}</b> · pulled <b>${s.pulled}</b> events · ${conflicts}${problem}`;
  }
}
