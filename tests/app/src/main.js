// Exposes the package to the test driver as an app would import it: by its name, resolved by
// Vite from node_modules (the packed tarball), with no Vite configuration for it.
import { RunStore, RunStoreError, ErrorCode } from 'runstore';
import { readmeExample, expectedOutput } from './readme-example.js';

window.runstore = { RunStore, RunStoreError, ErrorCode, readmeExample, expectedOutput };
document.getElementById('status').textContent = 'ready';
