// Export and Import: the whole store as one SQLite file to download, and such a file loaded
// back (here, in another browser, or in a native store). An import replaces everything, so every
// tab of the demo reloads afterwards: their runners start again from the imported journal.

const FILE_TYPE = 'application/vnd.sqlite3';
/** Tells the demo's other tabs that the store was replaced. */
const imported = new BroadcastChannel('runstore-demo:imported');

/** Wires the Export and Import buttons to `store`; `onError(error)` shows a failure. */
export function setUpTransfer(store, onError) {
  imported.onmessage = () => location.reload();
  const exportButton = document.getElementById('export');
  const importButton = document.getElementById('import');
  const picker = document.getElementById('import-file');
  exportButton.disabled = false;
  importButton.disabled = false;
  exportButton.onclick = () => download(store).catch(onError);
  importButton.onclick = () => picker.click();
  picker.onchange = async () => {
    const [file] = picker.files;
    picker.value = '';
    if (!file || !confirm(`Replace every workflow with the contents of ${file.name}?`)) return;
    try {
      await store.importDatabase(new Uint8Array(await file.arrayBuffer()));
      imported.postMessage('reload');
      location.reload();
    } catch (error) {
      // INVALID_INPUT for a file that is not a runstore database: the store is as it was.
      onError(error);
    }
  };
}

async function download(store) {
  const bytes = await store.exportDatabase();
  const stamp = new Date().toISOString().replaceAll(':', '-').slice(0, 19);
  const url = URL.createObjectURL(new Blob([bytes], { type: FILE_TYPE }));
  const link = Object.assign(document.createElement('a'), { href: url, download: `runstore-demo-${stamp}.sqlite` });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
