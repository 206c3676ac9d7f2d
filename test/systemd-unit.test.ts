/**
 * The systemd unit in the repository (deploy/svc.service, docs/running-for-real.md) is one systemd
 * accepts without a warning, where `systemd-analyze` exists: its paths are those of this checkout
 * for the check (`verify` looks for the executables), the rest as shipped.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const UNIT = readFileSync(join(ROOT, 'deploy', 'svc.service'), 'utf8');
const hasAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;

describe('deploy/svc.service', () => {
  it('starts the Node 24 of the package on dist/src/main.js serve, with its state in /var/lib/svc', () => {
    assert.match(
      UNIT,
      /^ExecStart=\/opt\/svc\/node_modules\/\.bin\/node \/opt\/svc\/dist\/src\/main\.js serve .*--db \/var\/lib\/svc\/registry\.db$/m,
    );
    for (const line of [
      'User=svc',
      'StateDirectory=svc',
      'KillSignal=SIGTERM',
      'Restart=on-failure',
      'LimitNOFILE=65536',
    ])
      assert.match(UNIT, new RegExp(`^${line}$`, 'm'), line);
  });

  it(
    'passes systemd-analyze verify without a warning',
    { skip: hasAnalyze ? undefined : 'systemd-analyze is not installed here' },
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'svc-unit-'));
      try {
        const file = join(dir, 'svc.service');
        writeFileSync(file, UNIT.replaceAll('/opt/svc', ROOT));
        const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8', timeout: 30_000 });
        assert.equal(r.status, 0, r.stderr);
        assert.equal(`${r.stdout}${r.stderr}`.trim(), '', 'no warning');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
