// A tiny HTML template tag: every interpolated value is escaped, except fragments built by
// `html` itself (and arrays of them), so markup is composed without string-escaping mistakes.

class Fragment {
  constructor(markup) {
    this.markup = markup;
  }

  toString() {
    return this.markup;
  }
}

const escapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function render(value) {
  if (value instanceof Fragment) return value.markup;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return String(value).replace(/[&<>"']/g, (c) => escapes[c]);
}

export function html(strings, ...values) {
  return new Fragment(strings.reduce((out, s, i) => out + render(values[i - 1]) + s));
}
