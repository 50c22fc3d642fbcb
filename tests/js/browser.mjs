// Test support: a static file server on 127.0.0.1 and a browser, as root on a machine without
// outside network. RUNSTORE_ENGINE picks the engine the same test files run in:
// - chromium (default): Debian's Chromium, headless, driven by playwright-core;
// - firefox: Debian's Firefox ESR, headless, through puppeteer-core over WebDriver BiDi
//   (engines/firefox.mjs);
// - webkit: WebKitGTK's MiniBrowser through WebKitWebDriver, on the display xvfb-run gives it
//   (engines/webkit.mjs).
// Each engine's pages offer the part of playwright's Page API the tests use; a test that fails
// names the engine in its title (see `engineTitle`).
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';
import { launchFirefox } from './engines/firefox.mjs';
import { launchWebKit } from './engines/webkit.mjs';

/** The engine the tests run in: chromium, firefox or webkit. */
export const ENGINE = process.env.RUNSTORE_ENGINE ?? 'chromium';
if (!['chromium', 'firefox', 'webkit'].includes(ENGINE)) {
  throw new Error(`RUNSTORE_ENGINE=${ENGINE}: chromium, firefox or webkit`);
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** Serves `root` on 127.0.0.1 at a free port; resolves to { url, close }. */
export async function serveStatic(root) {
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = join(root, path.endsWith('/') ? `${path}index.html` : path);
    if (!file.startsWith(root + sep)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Chromium on a fresh profile (so OPFS starts empty), removed again on close; resolves to a
 * playwright BrowserContext. `options` go to launchPersistentContext (a viewport, say).
 */
export async function launchChromium(options = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'runstore-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    ...options,
  });
  context.on('close', () => {
    // Best effort: Chromium may still be writing its profile as it exits; it is a temp dir.
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    } catch {}
  });
  return context;
}

/**
 * The engine chosen by RUNSTORE_ENGINE on a fresh profile, removed again on close; resolves to
 * a playwright BrowserContext (Chromium) or an object with the same `newPage()` and `close()`.
 * `options.viewport` sets the pages' size.
 */
export function launchBrowser(options = {}) {
  return launchEngine(ENGINE, options);
}

/** As `launchBrowser`, in `engine` (chromium, firefox or webkit). */
export function launchEngine(engine, options = {}) {
  if (engine === 'firefox') return launchFirefox(options);
  if (engine === 'webkit') return launchWebKit(options);
  return launchChromium(options);
}

/**
 * Where the test app's stores live (RUNSTORE_MEDIUM): `opfs` (the default where the engine has
 * OPFS) or `indexeddb` (the default in WebKit, which has no OPFS sync access handles). With
 * `indexeddb` the test app opens every store a test asks for on OPFS on IndexedDB instead
 * (tests/app/src/main.js), so the same tests run on that medium.
 */
export const MEDIUM = process.env.RUNSTORE_MEDIUM ?? (ENGINE === 'webkit' ? 'indexeddb' : 'opfs');

/**
 * Ends the first live worker of the test app's `page` whose script URL contains `part`: from
 * inside it (`self.close()`) where the driver reaches workers (Chromium), else with
 * `terminate()` from the page (tests/app/src/main.js keeps the page's workers).
 */
export async function endWorker(page, part) {
  if (ENGINE === 'chromium') {
    const worker = page.workers().find((w) => w.url().includes(part));
    await worker?.evaluate(() => self.close());
    return;
  }
  await page.evaluate((part) => window.runstore.workers.find((w) => !w.ended && w.url.includes(part))?.end(), part);
}

/** The test app's build (tests/app/dist), which scripts/test-js.sh makes before the tests. */
const TEST_APP = join(dirname(fileURLToPath(import.meta.url)), '..', 'app', 'dist');

/** Whether the engine can lower an origin's quota for a test (`useTestApp({ quota })`). */
export const CAN_LIMIT_QUOTA = ENGINE !== 'webkit';

/**
 * Serves the test app and starts the browser before a test file's tests, closing both after:
 * `app.browser` and `app.url` (the app, with the medium in its query) are set once the file's
 * `before` has run. `quota`: the bytes the app's origin may store. Firefox takes it as a pref
 * at launch; Chromium through the DevTools protocol, per page: call `app.limitQuota(page)`
 * (it does nothing in Firefox). WebKit has no way (CAN_LIMIT_QUOTA).
 */
export function useTestApp({ quota } = {}) {
  const app = { browser: null, url: null };
  let server;
  app.limitQuota = async (page) => {
    if (ENGINE !== 'chromium') return;
    const cdp = await app.browser.newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: new URL(app.url).origin, quotaSize: quota });
  };
  before(async () => {
    server = await serveStatic(TEST_APP);
    app.url = `${server.url}?medium=${MEDIUM}`;
    app.browser = await launchBrowser({ quota });
  });
  after(async () => {
    await app.browser?.close();
    await server?.close();
  });
  return app;
}
