// What changed between two JSON values: one entry per path that was added, removed or changed
// (objects by key, arrays by index), the deepest path where the two differ.

const MAX_ENTRIES = 200;

const isObject = (v) => v !== null && typeof v === 'object';

/** `[{ path, kind: 'added' | 'removed' | 'changed', before, after }]`, at most 200 entries. */
export function jsonDiff(before, after) {
  const out = [];
  walk(before, after, '$', out);
  return out;
}

function walk(a, b, path, out) {
  if (out.length >= MAX_ENTRIES) return;
  if (isObject(a) && isObject(b) && Array.isArray(a) === Array.isArray(b)) {
    const keys = Array.isArray(a)
      ? Array.from({ length: Math.max(a.length, b.length) }, (_, i) => i)
      : [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const key of keys) {
      const next = Array.isArray(a) ? `${path}[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      const has = (o) => (Array.isArray(o) ? key < o.length : Object.hasOwn(o, key));
      if (!has(a)) out.push({ path: next, kind: 'added', after: b[key] });
      else if (!has(b)) out.push({ path: next, kind: 'removed', before: a[key] });
      else walk(a[key], b[key], next, out);
      if (out.length >= MAX_ENTRIES) return;
    }
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push({ path, kind: 'changed', before: a, after: b });
}
