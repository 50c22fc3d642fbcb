// Writes every JavaScript and TypeScript code block of the README and the docs into a folder,
// with a tsconfig.json, for tsc to check them as an app's strict TypeScript would: `strict`, the
// package's declarations checked too (`skipLibCheck: false`), the app's own `lib` (ES2022 and
// DOM). A block that is a file (its first line `// NAME.js: ...`) is written as that file and
// checked as JavaScript (`checkJs`); a file shown in two places must read the same in both. Any
// other block is written as a TypeScript module, as a newcomer pastes the quick start into an
// app. What the snippets take as given (an open `store`, a LangGraph `workflow`, ...) is
// declared in readme-context.ts, with real types. Run by scripts/test-langgraph.sh in
// tests/langgraph, where every package a block imports is installed.
// Usage: node tests/js/readme-types.mjs DIR README.md docs/*.md
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const BLOCK = /^( *)```(js|javascript|ts|typescript)\n([\s\S]*?)^\1```/gm;

/** A markdown file's code blocks: `{ name, code }`, a file's own name or `STEM-LINE.ts`. */
export function readmeBlocks(markdownPath) {
  const text = readFileSync(markdownPath, 'utf8');
  const stem = basename(markdownPath, '.md').toLowerCase();
  const blocks = [];
  for (const match of text.matchAll(BLOCK)) {
    const [, indent, , body] = match;
    const code = body
      .split('\n')
      .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
      .join('\n');
    const file = code.match(/^\/\/ ([\w.-]+\.js): /);
    const line = text.slice(0, match.index).split('\n').length;
    // `export {}` makes a snippet without imports a module of its own, as a file in an app is.
    blocks.push(file ? { name: file[1], code } : { name: `${stem}-${line}.ts`, code: `${code}\nexport {};\n` });
  }
  return blocks;
}

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    lib: ['ES2022', 'DOM'],
    // Only what the blocks import: Node's types (which declare Symbol.dispose, among others)
    // come with whatever else is installed here, not with a browser app.
    types: [],
    strict: true,
    skipLibCheck: false,
    allowJs: true,
    checkJs: true,
    noEmit: true,
  },
  include: ['*.ts', '*.js'],
};

/** Writes the files' blocks, the context and the tsconfig into `outDir` (emptied first); returns the blocks' names. */
export function writeReadmeTypes(markdownPaths, outDir) {
  const blocks = new Map();
  for (const path of markdownPaths) {
    for (const { name, code } of readmeBlocks(path)) {
      const seen = blocks.get(name);
      if (seen && seen.code !== code) throw new Error(`${name} reads differently in ${seen.path} and ${path}`);
      blocks.set(name, { code, path });
    }
  }
  if (blocks.size === 0) throw new Error(`${markdownPaths.join(', ')}: no js or ts code blocks`);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  for (const [name, { code }] of blocks) writeFileSync(join(outDir, name), code);
  copyFileSync(new URL('./readme-context.ts', import.meta.url), join(outDir, 'readme-context.ts'));
  writeFileSync(join(outDir, 'tsconfig.json'), `${JSON.stringify(TSCONFIG, null, 2)}\n`);
  return [...blocks.keys()];
}

if (process.argv[1] && basename(process.argv[1]) === 'readme-types.mjs') {
  const [outDir, ...markdownPaths] = process.argv.slice(2);
  console.log(`[types] ${writeReadmeTypes(markdownPaths, outDir).join(', ')} from ${markdownPaths.join(', ')} into ${outDir}`);
}
