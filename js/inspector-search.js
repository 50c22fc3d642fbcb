// The workflow list's filters as the visibility index takes them, and the search box's words:
// `key=value`, `key!=value`, `key>value` (and `>=`, `<`, `<=`) and `has:key` are predicates on
// search attributes (a value is read as JSON when it is JSON, `"quoted text"` included, else
// as text); any other word is a workflow id prefix. The index has no filter on ids, so a
// prefix is matched while reading the listing (the search says how far it has read).

const PREDICATE = /^([A-Za-z_][\w.-]*)(!=|>=|<=|=|>|<)(.+)$/;
const OPS = { '=': 'eq', '!=': 'ne', '>': 'gt', '>=': 'gte', '<': 'lt', '<=': 'lte' };

/** The search box's words, a quoted value kept whole: `waiting="wait approve" order-`. */
function words(text) {
  return text.match(/(?:[^\s"]+|"(?:[^"\\]|\\.)*")+/g) ?? [];
}

function value(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The search box read: `{ prefix, search }`, `search` the attribute predicates. */
export function parseSearch(text) {
  const search = [];
  const prefixes = [];
  for (const word of words(text.trim())) {
    const has = /^(-?)has:(.+)$/.exec(word);
    if (has) {
      search.push({ key: has[2], op: has[1] ? 'notExists' : 'exists' });
      continue;
    }
    const match = PREDICATE.exec(word);
    if (match) search.push({ key: match[1], op: OPS[match[2]], value: value(match[3]) });
    else prefixes.push(word);
  }
  return { prefix: prefixes.length ? prefixes.join(' ') : null, search };
}

/** The start of a time filter choice, relative to `now` (null: any time). */
const SINCE = { any: null, '15m': 15 * 60_000, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };
export const SINCE_CHOICES = [
  ['any', 'any time'],
  ['15m', 'last 15 minutes'],
  ['1h', 'last hour'],
  ['24h', 'last 24 hours'],
  ['7d', 'last 7 days'],
  ['range', 'between…'],
];

/** A `datetime-local` input's value as ms since the epoch (null when empty). */
const localTime = (text) => (text ? new Date(text).getTime() : null);

/**
 * The visibility filter of the list's controls: `{ type, status, since, from, before, text }`
 * (strings as the inputs hold them). Returns `{ filter, prefix }`.
 */
export function visibilityFilter(controls, now = Date.now()) {
  const { prefix, search } = parseSearch(controls.text ?? '');
  const filter = { search };
  if (controls.type) filter.workflowType = controls.type;
  if (controls.status) filter.statuses = [controls.status];
  if (controls.since === 'range') {
    const from = localTime(controls.from);
    const before = localTime(controls.before);
    if (from !== null || before !== null) filter.startTime = { from, before };
  } else if (SINCE[controls.since]) {
    filter.startTime = { from: now - SINCE[controls.since], before: null };
  }
  return { filter, prefix };
}
