// WebKit (WebKitGTK's MiniBrowser) through WebKitWebDriver, the W3C WebDriver protocol over
// HTTP: six of its commands drive everything, so they are called with fetch. WebKitGTK needs a
// display (run under xvfb-run); the driver hangs without one, so every request has a deadline.
//
// WebDriver runs one command at a time in one window. So that pages run side by side, as
// tabs do, `evaluate` starts the function in the page and polls for its result, and every
// command goes through one queue that switches to its page's window first.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { freePort } from '../sync-server.mjs';
import { DomPage, DEFAULT_TIMEOUT_MS } from './page.mjs';

const DRIVER = process.env.WEBKIT_WEBDRIVER ?? '/usr/bin/WebKitWebDriver';
/** The longest one WebDriver request may take; a stuck driver fails the test instead. */
const REQUEST_MS = 60_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForPort(port, limitMs) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const open = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket.end() || true));
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`WebKitWebDriver did not listen on port ${port} within ${limitMs} ms`);
    await sleep(50);
  }
}

/**
 * One WebDriver session: its commands, one at a time, each in the window it names. The
 * session's first window stays open and empty: WebDriver ends a session whose last window
 * closes, and opens new windows only from an open one.
 */
class Session {
  #base;
  #queue = Promise.resolve();
  #current = null;
  keeper = null;

  constructor(base, id) {
    this.#base = `${base}/session/${id}`;
  }

  async #request(method, path, body) {
    const response = await fetch(this.#base + path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_MS),
    });
    const { value } = await response.json();
    if (value?.error) throw new Error(`WebDriver ${method} ${path}: ${value.error}: ${value.message}`);
    return value;
  }

  /** Runs `method path body` in window `handle` (null: the first window), after the commands before it. */
  command(handle, method, path, body) {
    const run = async () => {
      const window = handle ?? this.keeper;
      if (window !== null && window !== this.#current) {
        await this.#request('POST', '/window', { handle: window });
        this.#current = window;
      }
      return this.#request(method, path, body);
    };
    const result = this.#queue.then(run);
    this.#queue = result.catch(() => {});
    return result;
  }

  forget(handle) {
    if (this.#current === handle) this.#current = null;
  }
}

/**
 * Runs in the page: starts `source(arg)` (or, for an `expression`, `source` itself, as
 * playwright evaluates a string) under `id`, its outcome kept for `POLL`.
 */
const START = `
  const [source, arg, id, expression] = arguments;
  const slots = (window.__webdriver ??= {});
  const slot = (slots[id] = { done: false });
  const evaluated = () => new Function('return (' + source + ')')();
  Promise.resolve()
    .then(() => (expression ? evaluated() : evaluated()(arg)))
    .then(
      (value) => Object.assign(slot, { done: true, value: value === undefined ? null : value }),
      // WebKit's stacks leave the message out.
      (error) => Object.assign(slot, { done: true, error: [String(error), error?.stack ?? ''].join(String.fromCharCode(10)) }),
    );
`;

/** Runs in the page: the outcome of the evaluation `id` once done, and the page's new console lines and errors. */
const POLL = `
  const [id] = arguments;
  const slot = window.__webdriver?.[id];
  const events = window.__webdriverEvents?.splice(0) ?? [];
  if (!slot) return { lost: true, events };
  if (!slot.done) return { done: false, events };
  delete window.__webdriver[id];
  return { done: true, outcome: slot, events };
`;

/** Runs in the page after each load: records console lines and uncaught errors for `on()`. */
const LISTEN = `
  if (!window.__webdriverEvents) {
    const events = (window.__webdriverEvents = []);
    for (const type of ['log', 'info', 'warn', 'error', 'debug']) {
      const original = console[type].bind(console);
      console[type] = (...args) => {
        events.push({ kind: 'console', type: type === 'warn' ? 'warning' : type, text: args.map(String).join(' ') });
        original(...args);
      };
    }
    addEventListener('error', (event) => events.push({ kind: 'pageerror', message: String(event.message) }));
    addEventListener('unhandledrejection', (event) =>
      events.push({ kind: 'pageerror', message: String(event.reason?.stack ?? event.reason) }));
  }
`;

let evaluations = 0;

/** WebDriver's codes of the keys playwright names (the others are typed as they are). */
const KEYS = {
  Tab: '\uE004',
  Enter: '\uE007',
  Shift: '\uE008',
  Escape: '\uE00C',
  Space: ' ',
  PageUp: '\uE00E',
  PageDown: '\uE00F',
  End: '\uE010',
  Home: '\uE011',
  ArrowLeft: '\uE012',
  ArrowUp: '\uE013',
  ArrowRight: '\uE014',
  ArrowDown: '\uE015',
};

class WebKitPage extends DomPage {
  #session;
  #handle;
  #listeners = { pageerror: [], console: [], dialog: [] };
  #closed = false;

  constructor(session, handle) {
    super();
    this.#session = session;
    this.#handle = handle;
  }

  #command(method, path, body) {
    if (this.#closed) return Promise.reject(new Error('the page is closed'));
    return this.#session.command(this.#handle, method, path, body);
  }

  #script(script, args) {
    return this.#command('POST', '/execute/sync', { script, args });
  }

  async #loaded() {
    await this.#script(LISTEN, []);
  }

  async goto(url) {
    await this.#command('POST', '/url', { url });
    await this.#loaded();
  }

  async reload() {
    await this.#command('POST', '/refresh', {});
    await this.#loaded();
  }

  /** WebDriver's switch to this window, which brings it to the front where the system can. */
  async bringToFront() {
    await this.#command('GET', '/window');
  }

  async close() {
    if (this.#closed) return;
    await this.#command('DELETE', '/window');
    this.#closed = true;
    this.#session.forget(this.#handle);
  }

  #dispatch(events) {
    for (const event of events) {
      if (event.kind === 'pageerror') {
        for (const listener of this.#listeners.pageerror) listener(new Error(event.message));
      } else {
        const message = { type: () => event.type, text: () => event.text };
        for (const listener of this.#listeners.console) listener(message);
      }
    }
  }

  async evaluate(fn, arg) {
    const id = `e${++evaluations}`;
    await this.#script(START, [fn.toString(), arg === undefined ? null : arg, id, typeof fn === 'string']);
    for (let pause = 2; ; pause = Math.min(pause * 2, 50)) {
      await sleep(pause);
      const outcome = await this.#script(POLL, [id]);
      this.#dispatch(outcome.events);
      if (outcome.lost) throw new Error('the page navigated away while the evaluation ran');
      if (!outcome.done) continue;
      if (outcome.outcome.error !== undefined) throw new Error(`in WebKit: ${outcome.outcome.error}`);
      return outcome.outcome.value;
    }
  }

  async waitForFunction(fn, arg, { timeout = DEFAULT_TIMEOUT_MS } = {}) {
    const deadline = Date.now() + timeout;
    const check = `
      const [source, arg] = arguments;
      const events = window.__webdriverEvents?.splice(0) ?? [];
      return { value: !!new Function('return (' + source + ')')()(arg), events };
    `;
    for (;;) {
      const { value, events } = await this.#script(check, [fn.toString(), arg === undefined ? null : arg]);
      this.#dispatch(events ?? []);
      if (value) return true;
      if (Date.now() > deadline) throw new Error(`waitForFunction timed out after ${timeout} ms in WebKit: ${fn}`);
      await sleep(50);
    }
  }

  /** 'pageerror' and 'console' as the page reports them after load; 'dialog': prompts are accepted (the session's setting). */
  on(event, listener) {
    this.#listeners[event]?.push(listener);
    return this;
  }

  addInitScript() {
    throw new Error('addInitScript is not available in WebKit through WebDriver');
  }

  exposeFunction() {
    throw new Error('exposeFunction is not available in WebKit through WebDriver');
  }

  /** As playwright's: `keyboard.press('Tab')`, `'Shift+Tab'`, through WebDriver's key actions. */
  get keyboard() {
    return {
      press: async (combination) => {
        const keys = combination.split('+').map((key) => KEYS[key] ?? key);
        const actions = [...keys.map((value) => ({ type: 'keyDown', value })), ...keys.reverse().map((value) => ({ type: 'keyUp', value }))];
        await this.#command('POST', '/actions', { actions: [{ type: 'key', id: 'keyboard', actions }] });
      },
    };
  }

  /**
   * As playwright's: the viewport's size in CSS pixels. WebDriver sets the window's outer size:
   * it is set once, and then again with what the window takes beyond its viewport. A window
   * cannot be narrower than MiniBrowser's least width (447 px): `innerWidth` says what it got.
   */
  async setViewportSize({ width, height }) {
    await this.#command('POST', '/window/rect', { width, height });
    const inner = await this.#script('return [window.innerWidth, window.innerHeight];', []);
    if (inner[0] === width && inner[1] === height) return;
    await this.#command('POST', '/window/rect', { width: 2 * width - inner[0], height: 2 * height - inner[1] });
  }

  async screenshot({ path }) {
    const png = Buffer.from(await this.#command('GET', '/screenshot'), 'base64');
    if (path) await writeFile(path, png);
    return png;
  }
}

/**
 * WebKit (MiniBrowser) in a WebDriver session of its own driver: a fresh, ephemeral profile.
 * Resolves to an object with `newPage()` and `close()`, as a playwright BrowserContext.
 */
export async function launchWebKit({ viewport } = {}) {
  if (!process.env.DISPLAY) throw new Error('WebKit needs a display: run the tests under xvfb-run');
  const port = await freePort();
  const driver = spawn(DRIVER, [`--port=${port}`], { stdio: 'ignore' });
  const stopDriver = () => driver.kill('SIGKILL');
  try {
    await waitForPort(port, 20_000);
    const base = `http://127.0.0.1:${port}`;
    const response = await fetch(`${base}/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // Prompts (the demo's confirm before an import) are accepted, as a user would.
      body: JSON.stringify({ capabilities: { alwaysMatch: { unhandledPromptBehavior: 'accept' } } }),
      signal: AbortSignal.timeout(REQUEST_MS),
    });
    const { value } = await response.json();
    if (!value?.sessionId) throw new Error(`WebKitWebDriver refused a session: ${JSON.stringify(value)}`);
    const session = new Session(base, value.sessionId);
    session.keeper = await session.command(null, 'GET', '/window');
    const rect = viewport && { width: viewport.width, height: viewport.height };
    return {
      async newPage() {
        const { handle } = await session.command(null, 'POST', '/window/new', { type: 'window' });
        if (rect) await session.command(handle, 'POST', '/window/rect', rect);
        return new WebKitPage(session, handle);
      },
      async close() {
        await session.command(null, 'DELETE', '').catch(() => {});
        stopDriver();
      },
    };
  } catch (error) {
    stopDriver();
    throw error;
  }
}
