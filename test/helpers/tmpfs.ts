/** A small tmpfs for full-disk tests: mounted only where the tests run as root, filled with a ballast file. */
import { execFileSync } from 'node:child_process';
import { rmSync, statfsSync, writeFileSync } from 'node:fs';
import { waitFor } from './wait.js';

/** Mounts a tmpfs of `sizeMiB` on `dir`; false when that is not allowed here (not root), so the caller skips. */
export function mountTmpfs(dir: string, sizeMiB: number): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Unmounts `dir`, trying again for a few seconds while a file on it is still being closed (EBUSY). */
export async function unmountTmpfs(dir: string): Promise<void> {
  await waitFor(
    `${dir} unmounted`,
    () => {
      execFileSync('umount', [dir], { stdio: 'pipe' });
      return true;
    },
    5000,
    100,
  );
}

/** Writes `path` so large that only `leftBytes` stay free on its file system; removing it gives the room back. */
export function fillBut(path: string, dir: string, leftBytes: number): void {
  rmSync(path, { force: true });
  const free = statfsSync(dir);
  writeFileSync(path, Buffer.alloc(Math.max(0, free.bavail * free.bsize - leftBytes)));
}
