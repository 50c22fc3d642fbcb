// runstore/langgraph as Node (and Deno, Bun) loads it. The saver (langgraph.js) imports the
// optional peer @langchain/langgraph-checkpoint, and Node reports a package that is missing
// while it links the imports, before any of this package's code runs ("Cannot find package").
// Loaded from here, a missing peer is an error that says what to install. Bundlers take
// langgraph.js itself, and name an import they cannot resolve when they build.
// The optional peer, and the peer it needs in turn.
const PEERS = ['@langchain/langgraph-checkpoint', '@langchain/core'];

let saver;
try {
  saver = await import('./langgraph.js');
} catch (error) {
  const missing = PEERS.find((peer) => error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes(`'${peer}'`));
  if (missing === undefined) throw error;
  throw new Error(
    `runstore/langgraph needs the package ${missing}, which is not installed: npm install ${missing} ` +
      '(runstore/langgraph takes @langchain/langgraph-checkpoint 1.2.1 or later, an optional peer dependency)',
    { cause: error },
  );
}

export const { RunStoreSaver, runEffectOnce } = saver;
