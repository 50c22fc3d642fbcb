// Where the package's wasm spends its bytes, by function and by part (SQLite's C, the store's
// code, the exported methods' wrappers, the argument readers, serde, serde_json, the standard
// library, wasm-bindgen): raw and gzipped (gzip -9, each part compressed on its own). The
// parts cover the code and data sections, not the module's other sections (types, imports,
// exports), so they sum to less than the file. Reads a wasm that keeps its function names (its `name` section):
// scripts/size-profile.sh builds one the way the release build is optimised, names kept.
// Usage: node scripts/size-profile.mjs FILE.wasm [--top N]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';

const { positionals, values } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' } } });
if (positionals.length !== 1) {
  console.error('usage: node scripts/size-profile.mjs FILE.wasm [--top N]');
  process.exit(2);
}
const wasm = readFileSync(positionals[0]);
if (wasm.length < 8 || wasm.readUInt32BE(0) !== 0x0061736d) {
  console.error(`${positionals[0]} is not a wasm module`);
  process.exit(1);
}

/** Parts, the first whose pattern matches a function's name taking it. */
const PARTS = [
  ['argument readers (value trees: walk.rs, value.rs, json_text.rs, convert.rs)', /wasm::value|wasm::walk|wasm::json_text|wasm::convert::(from_tree|input|convert)|value::(Variant|Map|Seq)/],
  ['exported methods (wasm-bindgen wrappers, with what was inlined into them)', /externref shim|^runstorecore_/],
  ['serde_json', /serde_json/],
  ['serde', /serde_core|^serde::|<serde::/],
  ['the store (runstore)', /runstore::/],
  ["SQLite's C", /^sqlite3|^[a-z][A-Za-z0-9_]*$/],
  ["Rust's standard library and allocator", /^core::|^alloc::|^std::|<core::|<alloc::|<std::|dlmalloc/],
  ['wasm-bindgen, js-sys, web-sys', /wasm_bindgen|js_sys|web_sys/],
];

/** An unsigned LEB128 at `at`: [value, offset after it]. */
function leb(at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    if (at >= wasm.length) throw new Error('the module ends inside a number: it is cut short');
    const byte = wasm[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return [value, at];
  }
}

/** The sections: id, where the section begins (its id byte), where its contents start and end. */
function sections() {
  const found = [];
  let at = 8;
  while (at < wasm.length) {
    const id = wasm[at];
    const [size, start] = leb(at + 1);
    found.push({ id, begin: at, start, end: start + size });
    at = start + size;
  }
  return found;
}

/** A custom section's name. */
function customName({ start }) {
  const [length, at] = leb(start);
  return wasm.subarray(at, at + length).toString();
}

/** How many functions are imported: they come first in the function index space. */
function importedFunctions({ start }) {
  let [count, at] = leb(start);
  let functions = 0;
  for (; count > 0; count -= 1) {
    for (let name = 0; name < 2; name += 1) {
      const [length, after] = leb(at);
      at = after + length;
    }
    const kind = wasm[at++];
    if (kind === 0) {
      functions += 1;
      at = leb(at)[1];
    } else if (kind === 1) {
      at = limits(at + 1);
    } else if (kind === 2) {
      at = limits(at);
    } else if (kind === 3) {
      at += 2;
    } else {
      at = leb(at + 1)[1]; // a tag: its attribute byte, then its type index
    }
  }
  return functions;
}

function limits(at) {
  const flags = wasm[at];
  at = leb(at + 1)[1];
  return flags & 1 ? leb(at)[1] : at;
}

function functionNames({ start, end }) {
  const names = new Map();
  let [length, at] = leb(start);
  at += length;
  while (at < end) {
    const kind = wasm[at];
    const [size, body] = leb(at + 1);
    if (kind === 1) {
      let [count, cursor] = leb(body);
      for (; count > 0; count -= 1) {
        const [index, afterIndex] = leb(cursor);
        const [nameLength, nameAt] = leb(afterIndex);
        names.set(index, wasm.subarray(nameAt, nameAt + nameLength).toString());
        cursor = nameAt + nameLength;
      }
    }
    at = body + size;
  }
  return names;
}

function functionBodies({ start }, firstIndex) {
  const bodies = [];
  let [count, at] = leb(start);
  for (let i = 0; i < count; i += 1) {
    const [size, body] = leb(at);
    bodies.push({ index: firstIndex + i, start: body, end: body + size });
    at = body + size;
  }
  return bodies;
}

const all = sections();
const imports = all.find((section) => section.id === 2);
const code = all.find((section) => section.id === 10);
const data = all.find((section) => section.id === 11);
const names = new Map();
const isNames = (section) => section.id === 0 && customName(section) === 'name';
for (const section of all.filter(isNames)) for (const [index, name] of functionNames(section)) names.set(index, name);
if (names.size === 0) {
  console.error(`${positionals[0]} keeps no function names: build it with scripts/size-profile.sh`);
  process.exit(1);
}
const functions = functionBodies(code, imports ? importedFunctions(imports) : 0).map((body) => ({
  ...body,
  size: body.end - body.start,
  name: names.get(body.index) ?? `function ${body.index}`,
}));
const gzipped = (buffers) => gzipSync(Buffer.concat(buffers), { level: 9 }).length;
const format = (n) => n.toLocaleString('en-US');

const parts = new Map([...PARTS.map(([label]) => [label, []]), ['other', []]]);
for (const fn of functions) {
  const part = PARTS.find(([, pattern]) => pattern.test(fn.name))?.[0] ?? 'other';
  parts.get(part).push(fn);
}
// The file without its `name` section (which the release build drops) is what it ships.
const shipped = [wasm.subarray(0, 8), ...all.filter((s) => !isNames(s)).map((s) => wasm.subarray(s.begin, s.end))];
const shippedBytes = shipped.reduce((total, part) => total + part.length, 0);
console.log(`${positionals[0]} without its names: ${format(shippedBytes)} B, ${format(gzipped(shipped))} B gzipped; code ${format(code.end - code.start)} B in ${format(functions.length)} functions\n`);
console.log('| part | functions | raw | gzipped |');
console.log('|---|---:|---:|---:|');
for (const [label, members] of [...parts].sort((a, b) => sum(b[1]) - sum(a[1]))) {
  console.log(`| ${label} | ${format(members.length)} | ${format(sum(members))} | ${format(gzipped(members.map(bytesOf)))} |`);
}
if (data) console.log(`| data section (SQLite's tables, SQL text, messages) | | ${format(data.end - data.start)} | ${format(gzipped([wasm.subarray(data.start, data.end)]))} |`);

console.log(`\nThe ${values.top} largest functions:\n`);
console.log('| function | raw | gzipped |');
console.log('|---|---:|---:|');
for (const fn of [...functions].sort((a, b) => b.size - a.size).slice(0, Number(values.top))) {
  console.log(`| \`${shortName(fn.name)}\` | ${format(fn.size)} | ${format(gzipped([bytesOf(fn)]))} |`);
}

function sum(members) {
  return members.reduce((total, fn) => total + fn.size, 0);
}

function bytesOf(fn) {
  return wasm.subarray(fn.start, fn.end);
}

/** A function's name without its hash and with long paths cut, for a table. */
function shortName(name) {
  const plain = name.replace(/::h[0-9a-f]{16}$/, '').replaceAll('|', '\\|');
  return plain.length > 110 ? `${plain.slice(0, 107)}...` : plain;
}
