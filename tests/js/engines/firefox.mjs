// Firefox (Debian's firefox-esr) through puppeteer-core over WebDriver BiDi: playwright-core's
// Firefox support needs playwright's own patched build, and stops at a BiDi command stock
// Firefox does not have. Pages get the part of playwright's Page API the tests use.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { DomPage, DEFAULT_TIMEOUT_MS } from './page.mjs';

class FirefoxPage extends DomPage {
  #page;

  constructor(page) {
    super();
    this.#page = page;
    page.setDefaultTimeout(DEFAULT_TIMEOUT_MS);
  }

  goto(url) {
    return this.#page.goto(url);
  }

  reload() {
    return this.#page.reload();
  }

  close(options) {
    return this.#page.close(options);
  }

  bringToFront() {
    return this.#page.bringToFront();
  }

  evaluate(fn, arg) {
    return this.#page.evaluate(fn, arg);
  }

  /**
   * As playwright's: the predicate, its argument, then the options. Checked every 50 ms, not at
   * each animation frame: a page behind another one gets no frames in Firefox, and a wait there
   * timed out with its condition long true.
   */
  waitForFunction(fn, arg, { timeout = DEFAULT_TIMEOUT_MS, polling = 50 } = {}) {
    return this.#page.waitForFunction(fn, { timeout, polling }, arg);
  }

  /** 'pageerror' (an Error), 'console' (type(), text()), 'dialog' (accept()). */
  on(event, listener) {
    this.#page.on(event, listener);
    return this;
  }

  addInitScript(fn) {
    return this.#page.evaluateOnNewDocument(fn);
  }

  exposeFunction(name, fn) {
    return this.#page.exposeFunction(name, fn);
  }

  screenshot(options) {
    return this.#page.screenshot(options);
  }

  /** As playwright's: `keyboard.press('Tab')`, `'Shift+Tab'`, a real key press. */
  get keyboard() {
    return { press: (key) => this.#page.keyboard.press(key) };
  }

  /** As playwright's: the viewport's size in CSS pixels. */
  setViewportSize({ width, height }) {
    return this.#page.setViewport({ width, height });
  }
}

/**
 * The prefs that give each origin `quota` bytes: Firefox's quota manager gives an origin
 * (group) a fifth of its global limit, at least 10 MiB (measured: a fixed limit of 120 MiB
 * gives `navigator.storage.estimate().quota` 24 MiB).
 */
function quotaPrefs(quota) {
  if (quota < 10 * 2 ** 20) throw new Error('Firefox gives an origin at least 10 MiB');
  return { 'dom.quotaManager.temporaryStorage.fixedLimit': Math.ceil((quota * 5) / 1024) };
}

/**
 * Firefox on a fresh profile (so OPFS and IndexedDB start empty), removed again on close;
 * resolves to an object with `newPage()` and `close()`, as a playwright BrowserContext.
 * `quota`: bytes each origin may store.
 */
export async function launchFirefox({ viewport, quota } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'runstore-firefox-'));
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: process.env.FIREFOX ?? '/usr/bin/firefox-esr',
    headless: true,
    userDataDir: profile,
    defaultViewport: viewport ?? null,
    extraPrefsFirefox: quota ? quotaPrefs(quota) : {},
  });
  return {
    async newPage() {
      return new FirefoxPage(await browser.newPage());
    },
    async close() {
      await browser.close();
      try {
        rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
      } catch {}
    },
  };
}
