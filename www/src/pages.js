// Every listing of the store is paged (at most 1000 items a call unless asked otherwise). A
// run's journal or the runs left running must be read whole, so these read every page.

/** Calls `read(page)` until the last page and returns every item in order. */
export async function readAll(read) {
  const items = [];
  let cursor = null;
  do {
    const page = await read({ cursor });
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}
