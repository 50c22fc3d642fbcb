// Only for this checkout: www/node_modules/runstore is a link to the repository root
// (`"runstore": "file:.."`), which lies outside www/. The dev server serves files outside its
// root only when allowed, and runstore/langgraph's imports of LangGraph (a peer dependency)
// must resolve to www's own copy, not from the root, hence `dedupe`. Installed from npm (or
// from a packed tarball) the package sits inside node_modules and needs neither.
export default {
  server: { fs: { allow: ['..'] } },
  resolve: { dedupe: ['@langchain/langgraph-checkpoint', '@langchain/core'] },
  // LangGraph.js and @langchain/core make one large chunk.
  build: { chunkSizeWarningLimit: 2000 },
};
