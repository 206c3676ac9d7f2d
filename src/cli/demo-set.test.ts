import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { demoSet, installedDemoDir } from './demo-set.js';

test('the demo set: --demo-dir as given (even missing), else ./examples/demo when it exists, else the installed set', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'demo-set-'));
  try {
    assert.ok(
      existsSync(join(installedDemoDir(), 'hello.flow.md')),
      'the installed set is the package root examples/demo',
    );
    const cases: [string, string | undefined, () => void, { dir: string; from: string }][] = [
      ['no directory anywhere', undefined, () => undefined, { dir: installedDemoDir(), from: 'installed with svc' }],
      ['given, relative, missing', 'nope', () => undefined, { dir: join(cwd, 'nope'), from: '--demo-dir' }],
      [
        './examples/demo is a file, not a directory',
        undefined,
        () => {
          mkdirSync(join(cwd, 'examples'));
          writeFileSync(join(cwd, 'examples', 'demo'), '');
        },
        { dir: installedDemoDir(), from: 'installed with svc' },
      ],
      [
        './examples/demo exists',
        undefined,
        () => {
          rmSync(join(cwd, 'examples', 'demo'));
          mkdirSync(join(cwd, 'examples', 'demo'));
        },
        { dir: join(cwd, 'examples', 'demo'), from: './examples/demo' },
      ],
      ['given wins over ./examples/demo', '/elsewhere', () => undefined, { dir: '/elsewhere', from: '--demo-dir' }],
    ];
    for (const [what, given, arrange, expected] of cases) {
      arrange();
      assert.deepEqual(demoSet(given, cwd), expected, what);
    }
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
