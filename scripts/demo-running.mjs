// Prints where another `vite preview` of the app folder given serves it ("at URL (PID N)"), or
// nothing: Vite keeps a lock file per running command in the app's cache folder and refuses a
// second preview of the same project, so scripts/demo.sh asks first and says so plainly.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const lockDir = join(process.argv[2], 'node_modules', '.vite', 'lock');
let files = [];
try {
  files = readdirSync(lockDir).filter((file) => file.endsWith('.json'));
} catch {
  process.exit(0);
}
for (const file of files) {
  try {
    const lock = JSON.parse(readFileSync(join(lockDir, file), 'utf8'));
    if (lock.command !== 'preview' || !Number.isInteger(lock.pid)) continue;
    process.kill(lock.pid, 0);
    console.log(`at ${lock.urls?.local?.[0] ?? 'an unknown URL'} (PID ${lock.pid})`);
    break;
  } catch {
    // An unreadable lock, or one whose process is gone: Vite ignores it too.
  }
}
