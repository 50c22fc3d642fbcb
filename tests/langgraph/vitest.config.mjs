// vitest runs only LangGraph's validation suites here (the other Node tests use node --test).
export default {
  test: { include: ['validation.test.mjs', 'delta-channel-history.test.mjs'], globals: true, testTimeout: 20_000 },
};
