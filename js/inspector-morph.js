// Drawing a view again changes only what changed: the new markup is compared with the nodes
// there, node by node, and a text, an attribute or a differing node is replaced in place. A
// button whose markup did not change stays the same element: a click that began on it (the
// mouse pressed, not yet released) ends on it, and the keyboard's focus stays on it, however
// often the store changes the rows around it.

/** Makes `element`'s content what `markup` describes, touching only what differs. */
export function morph(element, markup) {
  const template = element.ownerDocument.createElement('template');
  template.innerHTML = markup;
  children(element, template.content);
}

/** Whether `a` can be updated into `b` rather than replaced. */
function same(a, b) {
  if (a.nodeType !== b.nodeType || a.nodeName !== b.nodeName) return false;
  if (a.nodeType !== 1) return true;
  // Keyed elements (a row's workflow, a step's name) are the same element only for the same key.
  return a.id === b.id && a.getAttribute('data-key') === b.getAttribute('data-key');
}

function children(from, to) {
  const before = [...from.childNodes];
  const after = [...to.childNodes];
  for (let i = 0; i < after.length; i++) {
    const old = before[i];
    const next = after[i];
    if (!old) from.append(next);
    else if (same(old, next)) update(old, next);
    else from.replaceChild(next, old);
  }
  for (let i = after.length; i < before.length; i++) before[i].remove();
}

function update(old, next) {
  if (old.nodeType !== 1) {
    if (old.nodeValue !== next.nodeValue) old.nodeValue = next.nodeValue;
    return;
  }
  for (const { name } of [...old.attributes]) if (!next.hasAttribute(name)) old.removeAttribute(name);
  for (const { name, value } of [...next.attributes]) if (old.getAttribute(name) !== value) old.setAttribute(name, value);
  children(old, next);
}
