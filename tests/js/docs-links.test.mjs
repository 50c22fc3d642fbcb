// Every link of the README and the docs leads somewhere: a relative link (docs/ and
// BENCHMARKS.md link relatively) to a file of the repository and, with a `#fragment`, to a
// heading of it; the README's absolute links to this repository's files (it is shown on npm,
// where only the tarball is: tests/js/pack.test.mjs) to a file and heading that exist here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const REPO = 'https://github.com/runstore/runstore/blob/main/';
const RAW = 'https://raw.githubusercontent.com/runstore/runstore/main/';

const pages = ['README.md', 'BENCHMARKS.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** A page's text outside fenced code blocks, where a `#` line is a heading and `[a](b)` a link. */
function prose(path) {
  return readFileSync(join(root, path), 'utf8').replace(/^( *)```[^\n]*\n[\s\S]*?^\1```/gm, '');
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as `-`, repeats numbered. */
function anchors(path) {
  const seen = new Map();
  const found = new Set();
  for (const [, heading] of prose(path).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = text.toLowerCase().replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    found.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return found;
}

/** Where a link leads, as a path from the root and a fragment; null for a link elsewhere. */
function target(page, link) {
  const [path, fragment = null] = link.split('#');
  if (/^(mailto:|https?:)/.test(link)) {
    for (const base of [REPO, RAW]) {
      if (path.startsWith(base)) return { file: path.slice(base.length), fragment };
    }
    assert.ok(!/github(usercontent)?\.com\/runstore\/runstore\//.test(link), `${page}: ${link} is a link into this repository of another form`);
    return null;
  }
  if (path === '') return { file: page, fragment };
  return { file: relative(root, join(root, dirname(page), path)), fragment };
}

test('every link of the README and the docs leads to a file, and a heading, that exist', () => {
  const broken = [];
  let checked = 0;
  for (const page of pages) {
    for (const [, link] of prose(page).matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)) {
      const to = target(page, link);
      if (!to) continue;
      checked += 1;
      const file = join(root, to.file);
      if (!existsSync(file)) {
        broken.push(`${page}: ${link}: no file ${to.file}`);
      } else if (to.fragment !== null && !(statSync(file).isFile() && to.file.endsWith('.md') && anchors(to.file).has(to.fragment))) {
        broken.push(`${page}: ${link}: ${to.file} has no heading #${to.fragment}`);
      }
    }
  }
  assert.ok(checked > 50, `only ${checked} links found`);
  assert.deepEqual(broken, []);
});

test('the README links into the repository absolutely, the docs relatively', () => {
  const readme = prose('README.md');
  const relativeLinks = [...readme.matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)].map((m) => m[1]).filter((link) => !/^(https:|mailto:|#)/.test(link));
  assert.deepEqual(relativeLinks, []);
  for (const page of pages.filter((page) => page.startsWith('docs/'))) {
    const absolute = [...prose(page).matchAll(/\]\((https:\/\/github\.com\/runstore\/runstore\/blob\/main\/[^)\s]+)/g)].map((m) => m[1]);
    assert.deepEqual(absolute, [], `${page} links into the repository absolutely`);
  }
});
