// The page of the reload test (index.html) and the saver benchmark's page (bench.html).
export default {
  build: {
    rolldownOptions: { input: { index: 'index.html', bench: 'bench.html' } },
    // LangGraph.js and @langchain/core make one large chunk; that is what an app ships too.
    chunkSizeWarningLimit: 2000,
  },
};
