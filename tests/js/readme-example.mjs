// Turns the README's JavaScript quick start, and the tour of the store in docs/browser-apps.md
// that goes on from it, into a module of the test app, so the test runs the examples exactly
// as the docs show them. Each `console.log(...); // → text` line states what an example prints;
// the expected lines are exported beside the function.
//
// A source is `FILE#SECTION`: the markdown file (from the repository's root) and the heading
// `## SECTION` whose code is meant.
//
// `node tests/js/readme-example.mjs OUT [SOURCE...]` writes the module: the first ```js block
// under each source's heading, run one after the other (QUICK_START without sources).
//
// With `--files DIR SOURCE...` it writes the files the sources show instead: each ```js block
// whose first line is `// NAME.js: ...` becomes DIR/NAME.js, as written. A file shown under
// several sources (the README's first workflow is docs/workflows.md's) must read the same in
// each.
//
// With `--vitest DIR SOURCE ENVIRONMENT...` it writes the source's files, the quick start as
// DIR/quick-start.js with a vitest test of what it prints, and a copy of each test for each
// vitest environment named (`jsdom`, `happy-dom`) that starts `// @vitest-environment NAME`,
// as a front-end app's unit tests do.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url);

/** The quick start's examples, in the order the module runs them. */
export const QUICK_START = ['README.md#Quick start', 'docs/browser-apps.md#A tour of the store'];

/** The text under the heading a source names, up to the next `## ` heading. */
export function sectionText(source) {
  const [file, section] = source.split('#');
  if (!section) throw new Error(`"${source}" names no section (FILE#SECTION)`);
  const text = readFileSync(new URL(file, ROOT), 'utf8');
  const heading = `## ${section}\n`;
  const start = text.startsWith(heading) ? 0 : text.indexOf(`\n${heading}`);
  if (start < 0) throw new Error(`${file} has no "## ${section}"`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** The first ```js block under each source: its imports, the lines it says it prints, its body. */
export function extractExamples(sources = QUICK_START) {
  const examples = sources.map((source) => {
    const match = sectionText(source).match(/```js\n([\s\S]*?)```/);
    if (!match) throw new Error(`no \`\`\`js block under "${source}"`);
    const code = match[1];
    const lines = code.split('\n');
    return {
      source,
      imports: lines.filter((line) => line.startsWith('import ')),
      expected: [...code.matchAll(/console\.log\(.*\); \/\/ → (.*)$/gm)].map((m) => m[1].trim()),
      body: lines.filter((line) => !line.startsWith('import ')).map((line) => `    ${line}`).join('\n'),
    };
  });
  // One import per module, of every name the examples import from it.
  const names = new Map();
  for (const line of examples.flatMap(({ imports }) => imports)) {
    const parsed = line.match(/^import \{ ([\w, ]+) \} from '([\w/.-]+)';$/);
    if (!parsed) throw new Error(`an example's import this script cannot merge: ${line}`);
    const [, list, from] = parsed;
    if (!names.has(from)) names.set(from, new Set());
    for (const name of list.split(',')) names.get(from).add(name.trim());
  }
  const imports = [...names].map(([from, set]) => `import { ${[...set].join(', ')} } from '${from}';`);
  return { examples, imports };
}

export function writeReadmeModule(outPath, sources = QUICK_START) {
  const { examples, imports } = extractExamples(sources);
  const expected = examples.flatMap((example) => example.expected);
  // Each example in a block of its own: each opens its own store under its own names.
  const blocks = examples.map(({ source, body }) => `  // ${source}\n  {\n${body}\n  }`).join('\n');
  const module = `// Generated from ${sources.join(', ')} by tests/js/readme-example.mjs; do not edit.
${imports.join('\n')}

export const expectedOutput = ${JSON.stringify(expected)};

export async function readmeExample() {
${blocks}
}
`;
  writeFileSync(outPath, module);
  return expected;
}

/** Writes the files the sources show into `outDir` (emptied first); returns their names. */
export function writeReadmeFiles(sources, outDir) {
  const files = new Map();
  for (const source of sources) {
    const found = [...sectionText(source).matchAll(/```js\n\/\/ ([\w.-]+\.js): [^\n]*\n[\s\S]*?```/g)];
    if (found.length === 0) throw new Error(`no files (\`// NAME.js: ...\` blocks) under "${source}"`);
    for (const [block, name] of found) {
      const code = block.slice('```js\n'.length, -'```'.length);
      const seen = files.get(name);
      if (seen && seen.code !== code) throw new Error(`${name} reads differently under "${seen.source}" and "${source}"`);
      files.set(name, { code, source });
    }
  }
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  for (const [name, { code }] of files) writeFileSync(join(outDir, name), code);
  return [...files.keys()];
}

const QUICK_START_TEST = `// Generated by tests/js/readme-example.mjs; do not edit.
import { expect, test } from 'vitest';
import { expectedOutput, readmeExample } from './quick-start.js';

test("the README's quick start and the tour of the store print what they say", async () => {
  const printed = [];
  const log = console.log;
  console.log = (...values) => printed.push(values.map(String).join(' '));
  try {
    await readmeExample();
  } finally {
    console.log = log;
  }
  expect(printed).toEqual(expectedOutput);
});
`;

/**
 * Writes the files `source` shows and the quick start with its test into `outDir`, and a copy
 * of every test per vitest environment in `environments`; returns the tests' names.
 */
export function writeVitestRuns(source, outDir, environments) {
  writeReadmeFiles([source], outDir);
  writeReadmeModule(join(outDir, 'quick-start.js'));
  writeFileSync(join(outDir, 'quick-start.test.js'), QUICK_START_TEST);
  const tests = readdirSync(outDir).filter((name) => name.endsWith('.test.js'));
  const copies = [];
  for (const environment of environments) {
    for (const name of tests) {
      const code = readFileSync(join(outDir, name), 'utf8');
      const copy = name.replace(/\.test\.js$/, `.${environment}.test.js`);
      writeFileSync(join(outDir, copy), `// @vitest-environment ${environment}\n${code}`);
      copies.push(copy);
    }
  }
  return [...tests, ...copies];
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  if (process.argv[2] === '--files') {
    const [outDir, ...sources] = process.argv.slice(3);
    console.log(`[docs] ${writeReadmeFiles(sources, outDir).join(', ')} from ${sources.join(', ')} into ${outDir}`);
  } else if (process.argv[2] === '--vitest') {
    const [outDir, source, ...environments] = process.argv.slice(3);
    console.log(`[docs] ${writeVitestRuns(source, outDir, environments).join(', ')} into ${outDir}`);
  } else {
    const [outPath, ...sources] = process.argv.slice(2);
    const expected = writeReadmeModule(outPath, sources.length > 0 ? sources : QUICK_START);
    console.log(`[docs] the quick start (${expected.length} lines printed) into ${outPath}`);
  }
}
