// Turns the README's JavaScript quick start into a module of the test app, so the test runs
// the example exactly as the README shows it. Each `console.log(...); // → text` line states
// what the example prints; the expected lines are exported beside the function.
//
// With `--files README SECTION DIR` it writes the files the README shows under `## SECTION`
// instead: each ```js block whose first line is `// NAME.js: ...` becomes DIR/NAME.js, as
// written (the Node section's vitest example, run by scripts/test-langgraph.sh).
//
// With `--vitest README SECTION DIR ENVIRONMENT...` it writes those files, the quick start as
// DIR/quick-start.js with a vitest test of what it prints, and a copy of each test for each
// vitest environment named (`jsdom`, `happy-dom`) that starts `// @vitest-environment NAME`,
// as a front-end app's unit tests do.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function extractReadmeExample(readmePath) {
  const readme = readFileSync(readmePath, 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'));
  const match = section.match(/```js\n([\s\S]*?)```/);
  if (!match) throw new Error('README has no ```js block under "## Quick start"');
  const code = match[1];
  const expected = [...code.matchAll(/console\.log\(.*\); \/\/ → (.*)$/gm)].map((m) => m[1].trim());
  const body = code
    .split('\n')
    .filter((line) => !line.startsWith('import '))
    .map((line) => `  ${line}`)
    .join('\n');
  return { expected, body };
}

export function writeReadmeModule(readmePath, outPath) {
  const { expected, body } = extractReadmeExample(readmePath);
  const module = `// Generated from README.md by tests/js/readme-example.mjs; do not edit.
import { RunStore, RunStoreError } from 'runstore';

export const expectedOutput = ${JSON.stringify(expected)};

export async function readmeExample() {
${body}
}
`;
  writeFileSync(outPath, module);
  return expected;
}

/** Writes the files shown under `## <section>` into `outDir` (emptied first); returns their names. */
export function writeReadmeFiles(readmePath, section, outDir) {
  const readme = readFileSync(readmePath, 'utf8');
  const start = readme.indexOf(`## ${section}\n`);
  if (start < 0) throw new Error(`README has no "## ${section}"`);
  const end = readme.indexOf('\n## ', start + 1);
  const text = readme.slice(start, end < 0 ? undefined : end);
  const files = [...text.matchAll(/```js\n\/\/ ([\w.-]+\.js): [^\n]*\n[\s\S]*?```/g)];
  if (files.length === 0) throw new Error(`README has no files (\`// NAME.js: ...\` blocks) under "## ${section}"`);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  for (const [block, name] of files) writeFileSync(join(outDir, name), block.slice('```js\n'.length, -'```'.length));
  return files.map(([, name]) => name);
}

const QUICK_START_TEST = `// Generated from README.md by tests/js/readme-example.mjs; do not edit.
import { expect, test } from 'vitest';
import { expectedOutput, readmeExample } from './quick-start.js';

test("the README's quick start prints what it says", async () => {
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
 * Writes the files under `## <section>` and the quick start with its test into `outDir`, and a
 * copy of every test per vitest environment in `environments`; returns the tests' names.
 */
export function writeVitestRuns(readmePath, section, outDir, environments) {
  writeReadmeFiles(readmePath, section, outDir);
  writeReadmeModule(readmePath, join(outDir, 'quick-start.js'));
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
    const [readme, section, outDir] = process.argv.slice(3);
    console.log(`[readme] ${writeReadmeFiles(readme, section, outDir).join(', ')} from "## ${section}" into ${outDir}`);
  } else if (process.argv[2] === '--vitest') {
    const [readme, section, outDir, ...environments] = process.argv.slice(3);
    console.log(`[readme] ${writeVitestRuns(readme, section, outDir, environments).join(', ')} into ${outDir}`);
  } else {
    writeReadmeModule(process.argv[2], process.argv[3]);
  }
}
