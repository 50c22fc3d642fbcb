// Test support: a static file server on 127.0.0.1 and headless Chromium (Debian's, driven by
// playwright-core) as root on a machine without a display or outside network.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';

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

/** The test app's build (tests/app/dist), which scripts/test-js.sh makes before the tests. */
const TEST_APP = join(dirname(fileURLToPath(import.meta.url)), '..', 'app', 'dist');

/**
 * Serves the test app and starts Chromium before a test file's tests, closing both after:
 * `app.browser` and `app.url` are set once the file's `before` has run.
 */
export function useTestApp() {
  const app = { browser: null, url: null };
  let server;
  before(async () => {
    server = await serveStatic(TEST_APP);
    app.url = server.url;
    app.browser = await launchChromium();
  });
  after(async () => {
    await app.browser?.close();
    await server?.close();
  });
  return app;
}
