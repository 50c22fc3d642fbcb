// The part of playwright's Page the tests use, for the engines playwright-core cannot drive
// here (Firefox, WebKit): everything that reads or acts on the DOM runs in the page through
// `evaluate`, the same code in every engine. An engine's page supplies `evaluate`,
// `waitForFunction`, navigation, `close`, `screenshot` and events.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Every element matching `selector`, looking into open shadow roots as playwright's selectors
 * do: each part of a descendant selector (`#host .inner`) may be inside the shadow roots of the
 * elements the part before it matched. Runs in the page (it is sent as its source).
 */
function deepAll(selector) {
  // The selector's top-level parts: split at commas and spaces outside brackets and quotes.
  const split = (text, at) => {
    const parts = [];
    let depth = 0;
    let quote = null;
    let part = '';
    for (const c of text) {
      if (quote) quote = c === quote ? null : quote;
      else if (c === '"' || c === "'") quote = c;
      else if ('[('.includes(c)) depth += 1;
      else if ('])'.includes(c)) depth -= 1;
      else if (depth === 0 && at.test(c)) {
        if (part.trim()) parts.push(part.trim());
        part = '';
        continue;
      }
      part += c;
    }
    if (part.trim()) parts.push(part.trim());
    return parts;
  };
  const below = (scope, part, out) => {
    const visit = (root) => {
      for (const el of root.querySelectorAll('*')) {
        if (el.matches(part)) out.add(el);
        if (el.shadowRoot) visit(el.shadowRoot);
      }
    };
    if (scope.shadowRoot) visit(scope.shadowRoot);
    visit(scope);
  };
  const found = new Set();
  for (const alternative of split(selector, /,/)) {
    const parts = split(alternative, /\s/);
    // A child combinator keeps to one tree: such a selector is matched as the document has it.
    if (parts.includes('>')) {
      for (const el of document.querySelectorAll(alternative)) found.add(el);
      continue;
    }
    let scopes = [document];
    for (const part of parts) {
      const next = new Set();
      for (const scope of scopes) below(scope, part, next);
      scopes = [...next];
    }
    for (const el of scopes) found.add(el);
  }
  return [...found];
}

/** Finds the `index`-th element (negative: from the end) matching `selector`, or throws. */
function pick(selector, index) {
  const all = deepAll(selector);
  const element = all[index < 0 ? all.length + index : index];
  if (!element) throw new Error(`no element matches ${selector} (#${index})`);
  return element;
}

/** `deepAll` and `pick` as one source for the page. */
const IN_PAGE = `(() => { ${deepAll}\n${pick}\n return { deepAll, pick }; })()`;

/** A selector and a position among its matches, as playwright's Locator has them. */
class Locator {
  constructor(page, selector, index = 0) {
    this.page = page;
    this.selector = selector;
    this.index = index;
  }

  first() {
    return new Locator(this.page, this.selector, 0);
  }

  last() {
    return new Locator(this.page, this.selector, -1);
  }

  count() {
    return this.page.evaluate(([helpers, selector]) => new Function(`return ${helpers}`)().deepAll(selector).length, [IN_PAGE, this.selector]);
  }

  evaluateAll(fn) {
    return this.page.evaluate(
      ([helpers, selector, source]) => new Function(`return (${source})`)()(new Function(`return ${helpers}`)().deepAll(selector)),
      [IN_PAGE, this.selector, fn.toString()],
    );
  }

  #act(action, ...rest) {
    return this.page.evaluate(
      ([helpers, selector, index, actionSource, rest]) => {
        const element = new Function(`return ${helpers}`)().pick(selector, index);
        return new Function(`return (${actionSource})`)()(element, ...rest);
      },
      [IN_PAGE, this.selector, this.index, action.toString(), rest],
    );
  }

  textContent() {
    return this.#act((element) => element.textContent);
  }

  getAttribute(name) {
    return this.#act((element, name) => element.getAttribute(name), name);
  }

  click() {
    return this.#act((element) => element.click());
  }

  setChecked(checked) {
    return this.#act((element, checked) => {
      if (element.checked !== checked) element.click();
    }, checked);
  }

  /** Sets the file input's files to `file` ({ name, mimeType, buffer }) and fires `change`. */
  setInputFile({ name, mimeType, buffer }) {
    return this.#act(
      (element, name, type, bytes) => {
        const files = new DataTransfer();
        files.items.add(new File([new Uint8Array(bytes)], name, { type }));
        element.files = files.files;
        element.dispatchEvent(new Event('change', { bubbles: true }));
      },
      name,
      mimeType,
      [...buffer],
    );
  }
}

export class DomPage {
  /** As playwright's: waits `ms` (the tests' pauses, the same in every engine). */
  waitForTimeout(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  locator(selector) {
    return new Locator(this, selector);
  }

  textContent(selector) {
    return this.locator(selector).textContent();
  }

  getAttribute(selector, name) {
    return this.locator(selector).getAttribute(name);
  }

  click(selector) {
    return this.locator(selector).click();
  }

  check(selector) {
    return this.locator(selector).setChecked(true);
  }

  uncheck(selector) {
    return this.locator(selector).setChecked(false);
  }

  isHidden(selector) {
    return this.evaluate(([helpers, selector]) => {
      const [element] = new Function(`return ${helpers}`)().deepAll(selector);
      return !element || element.hidden || getComputedStyle(element).display === 'none' || element.getClientRects().length === 0;
    }, [IN_PAGE, selector]);
  }

  setInputFiles(selector, file) {
    return this.locator(selector).setInputFile(file);
  }

  /** Waits for an element matching `selector` (`state`: 'visible', the default, or 'attached'). */
  waitForSelector(selector, { timeout = DEFAULT_TIMEOUT_MS, state = 'visible' } = {}) {
    return this.waitForFunction(
      ([helpers, selector, state]) => {
        const [element] = new Function(`return ${helpers}`)().deepAll(selector);
        if (!element) return false;
        return state === 'attached' || element.getClientRects().length > 0;
      },
      [IN_PAGE, selector, state],
      { timeout },
    );
  }

  /**
   * `load`: the next document in this page has loaded. `download`: the page offered a file
   * (a click on an `<a download>`); resolves to { suggestedFilename(), path() }, the file's
   * bytes read in the page as the click happened.
   */
  async waitForEvent(name, { timeout = DEFAULT_TIMEOUT_MS } = {}) {
    if (name === 'load') {
      const before = await this.evaluate(() => performance.timeOrigin);
      await this.waitForFunction(
        (before) => performance.timeOrigin !== before && document.readyState === 'complete',
        before,
        { timeout },
      );
      return undefined;
    }
    if (name !== 'download') throw new Error(`waitForEvent(${name}) is not supported in this engine`);
    await this.evaluate(() => {
      window.__downloads = [];
      document.addEventListener(
        'click',
        (event) => {
          const link = event.target.closest?.('a[download]');
          if (!link) return;
          event.preventDefault();
          window.__downloads.push(
            fetch(link.href)
              .then((response) => response.arrayBuffer())
              .then((bytes) => ({ name: link.download, bytes: [...new Uint8Array(bytes)] })),
          );
        },
        { capture: true },
      );
    });
    await this.waitForFunction(() => window.__downloads.length > 0, undefined, { timeout });
    const { name: filename, bytes } = await this.evaluate(() => window.__downloads[0]);
    const path = join(mkdtempSync(join(tmpdir(), 'runstore-download-')), filename);
    writeFileSync(path, Buffer.from(bytes));
    return { suggestedFilename: () => filename, path: async () => path };
  }
}

export { DEFAULT_TIMEOUT_MS };
