// Markup and wording shared by the inspector's views: a template tag that escapes every value
// it is given (except markup made by the tag itself), so a workflow id or an error message
// from the store can never become markup; and the few ways times, sizes and JSON are shown.

class Markup {
  constructor(text) {
    this.text = text;
  }

  toString() {
    return this.text;
  }
}

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function render(value) {
  if (value instanceof Markup) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** `html\`<b>${text}</b>\``: the values escaped, arrays joined, null, undefined and false left out. */
export function html(strings, ...values) {
  return new Markup(strings.reduce((out, s, i) => out + render(values[i - 1]) + s));
}

/** Markup from text the inspector made itself (never from stored data). */
export const trusted = (text) => new Markup(text);

/** `3.2 s`, `4 min 5 s`, `2 h 3 min`, `3 d 4 h`. */
export function duration(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1_000) return `${sign}${Math.round(rest)} ms`;
  if (rest < 60_000) return `${sign}${(rest / 1_000).toFixed(rest < 10_000 ? 1 : 0)} s`;
  const units = [['d', 86_400_000], ['h', 3_600_000], ['min', 60_000], ['s', 1_000]];
  const parts = [];
  for (const [name, size] of units) {
    if (rest >= size || parts.length) parts.push(`${Math.floor(rest / size)} ${name}`);
    rest %= size;
    if (parts.length === 2) break;
  }
  return sign + parts.join(' ');
}

const pad = (n, width = 2) => String(n).padStart(width, '0');

/** A time in the page's time zone: `14:03:07.120` today, else with its date. */
export function clock(ms, now = Date.now()) {
  if (ms === null || ms === undefined) return '';
  const d = new Date(ms);
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (new Date(now).toDateString() === d.toDateString()) return `${time}.${pad(d.getMilliseconds(), 3)}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

/** The time as ISO text, for a title. */
export const iso = (ms) => (ms === null || ms === undefined ? '' : new Date(ms).toISOString());

/** `1.5 KB`, `12 B`. */
export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export const plural = (n, one, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

/** A JSON value as indented text, cut after `max` characters. */
export function json(value, max = 4_000) {
  let text;
  try {
    text = JSON.stringify(value, null, 2) ?? 'undefined';
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max)}\n… (${text.length.toLocaleString('en')} characters)` : text;
}

/** A JSON value on one line, cut after `max` characters. */
export function brief(value, max = 120) {
  let text;
  try {
    text = JSON.stringify(value) ?? '';
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A status as a small coloured label; `title` says what it means. */
export const pill = (status, label = status, title = '') =>
  html`<span class="pill ${status}" title="${title}">${label}</span>`;

/** Bytes as text when they are UTF-8 without control characters, else null. */
export function textOf(data) {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(data);
    return /[\u0000-\u0008\u000e-\u001f]/.test(text) ? null : text;
  } catch {
    return null;
  }
}

/** The first bytes in hex, for bytes that are not text. */
export const hex = (data, max = 64) =>
  [...data.subarray(0, max)].map((b) => b.toString(16).padStart(2, '0')).join(' ') + (data.length > max ? ' …' : '');
