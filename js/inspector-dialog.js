// The confirmation every action asks for: a modal dialog that says what will be done, through
// which call, and what it cannot undo, with the fields the action takes. The action runs only
// on its button; a failure is shown in the dialog, which stays open to correct and retry.
import { html } from './inspector-html.js';

export class Confirm {
  #dialog;
  #pending = null;

  constructor(root) {
    const dialog = root.ownerDocument.createElement('dialog');
    dialog.setAttribute('aria-labelledby', 'confirm-title');
    dialog.innerHTML = `<form novalidate><h2 id="confirm-title"></h2><div class="body"></div><p class="error" role="alert"></p>
      <div class="buttons"><button type="submit" value="cancel">Cancel</button><button type="submit" value="ok" class="ok">OK</button></div></form>`;
    root.append(dialog);
    this.#dialog = dialog;
    dialog.querySelector('form').addEventListener('submit', (event) => this.#submit(event));
    dialog.addEventListener('close', () => this.#settle(false));
    // Fields may ask the dialog to say something again as they change (a purge's count).
    dialog.addEventListener('input', () => this.#pending?.onInput?.(this.#dialog.querySelector('form')));
  }

  /**
   * Asks: `title`, `body` (markup: what will happen), `ok` (the button's words), `run(form)`
   * (does it; resolves to what to tell, or throws to keep the dialog open with the error),
   * `onInput(form)` (fields changed), `focus` ('ok', 'cancel' or a field's name). Resolves to
   * the message `run` gave, or null when cancelled.
   */
  ask({ title, body, ok = 'OK', run, onInput, focus = 'ok' }) {
    this.#settle(null);
    const d = this.#dialog;
    d.querySelector('h2').textContent = title;
    d.querySelector('.body').innerHTML = String(body);
    d.querySelector('.error').textContent = '';
    d.querySelector('.ok').textContent = ok;
    return new Promise((resolve) => {
      this.#pending = { run, onInput, resolve };
      d.showModal();
      const target = focus === 'cancel' ? d.querySelector('[value="cancel"]') : focus === 'ok' ? d.querySelector('.ok') : d.querySelector(`[name="${focus}"]`);
      target?.focus();
      onInput?.(d.querySelector('form'));
    });
  }

  get open() {
    return this.#dialog.open;
  }

  async #submit(event) {
    event.preventDefault();
    const pending = this.#pending;
    if (!pending) return;
    if (event.submitter?.value !== 'ok') {
      this.#dialog.close();
      return;
    }
    const form = event.target;
    const ok = this.#dialog.querySelector('.ok');
    ok.disabled = true;
    try {
      const message = await pending.run(form);
      this.#settle(message ?? '');
      this.#dialog.close();
    } catch (error) {
      this.#dialog.querySelector('.error').textContent = `${error?.code ? `${error.code}: ` : ''}${error?.message ?? error}`;
    } finally {
      ok.disabled = false;
    }
  }

  #settle(value) {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = null;
    pending.resolve(value === false ? null : value);
  }
}

/** A labelled field of a dialog. */
export const field = (label, input) => html`<label>${label} ${input}</label>`;
