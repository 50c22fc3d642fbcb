// Turns the README's JavaScript quick start into a module of the test app, so the test runs
// the example exactly as the README shows it. Each `console.log(...); // → text` line states
// what the example prints; the expected lines are exported beside the function.
import { readFileSync, writeFileSync } from 'node:fs';

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

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  writeReadmeModule(process.argv[2], process.argv[3]);
}
