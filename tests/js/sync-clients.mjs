// Test support: the sync checker's clients (tests/js/sync-faults.test.mjs) behind one
// asynchronous interface, whether the store is the package's core in Node or the package's
// main-thread client on OPFS in a Chromium page (a browser profile of its own).
import { launchChromium, serveStatic } from './browser.mjs';
import { openMemoryStore } from './node-store.mjs';

/** Purges every closed workflow, whenever it closed. */
const PURGE = [2 ** 40, 1000];

/** A store of the package's core in this process, synced by `syncStore`. */
export class NodeClient {
  kind = 'node';

  static async open(name, syncStore) {
    return new NodeClient(await openMemoryStore(name), syncStore);
  }

  constructor(store, syncStore) {
    this.store = store;
    this.syncStore = syncStore;
  }

  async head(workflowId) { return this.store.head(workflowId); }

  async append(workflowId, events, expected) { return this.store.append(workflowId, events, expected); }

  async events(workflowId) {
    return this.store.readHistory(workflowId, { limit: 1000 }).items.map((stored) => stored.event ?? stored);
  }

  async exportDatabase() { return this.store.exportDatabase(); }

  async importDatabase(bytes) { this.store.importDatabase(bytes); }

  async purge() { return this.store.purgeWorkflows(...PURGE); }

  async sync(options) { return this.syncStore(this.store, options); }

  async close() { this.store.close(); }
}

/**
 * The package as an app bundles it (tests/app/dist, built by scripts/build-test-app.sh), in a
 * page of a fresh Chromium profile: a RunStore on OPFS, synced by `store.sync`.
 */
export class PageClient {
  kind = 'chromium';

  static async open(name, appDir) {
    const site = await serveStatic(appDir);
    const browser = await launchChromium();
    const page = await browser.newPage();
    page.on('pageerror', (error) => console.error(`page ${name} error:`, error));
    await page.goto(site.url);
    await page.waitForFunction(() => window.runstore !== undefined);
    await page.evaluate(async (name) => {
      window.store = await window.runstore.RunStore.open(name, { persistence: 'opfs' });
    }, name);
    return new PageClient(site, browser, page);
  }

  constructor(site, browser, page) {
    this.site = site;
    this.browser = browser;
    this.page = page;
  }

  head(workflowId) { return this.page.evaluate((id) => window.store.head(id), workflowId); }

  append(workflowId, events, expected) {
    return this.page.evaluate(({ workflowId, events, expected }) => window.store.append(workflowId, events, expected), { workflowId, events, expected });
  }

  events(workflowId) {
    return this.page.evaluate(async (id) => (await window.store.readHistory(id, { limit: 1000 })).items, workflowId);
  }

  purge() { return this.page.evaluate((purge) => window.store.purgeWorkflows(...purge), PURGE); }

  /** The pass's summary, its conflicts as plain data; a rejection as an Error with its code. */
  async sync(options) {
    const outcome = await this.page.evaluate(async (options) => {
      const plain = (e) => ({ ...e, code: e.code, message: e.message });
      try {
        const summary = await window.store.sync(options);
        return { summary: { ...summary, conflicts: summary.conflicts.map(plain) } };
      } catch (error) {
        return { error: plain(error) };
      }
    }, options);
    if (outcome.error) throw Object.assign(new Error(outcome.error.message), outcome.error);
    return outcome.summary;
  }

  async close() {
    try {
      await this.page.evaluate(() => window.store.close());
    } finally {
      await this.browser.close();
      await this.site.close();
    }
  }
}
