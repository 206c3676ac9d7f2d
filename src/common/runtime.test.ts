import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { MIN_NODE_MAJOR, runtimeRefusal } from './runtime.js';

describe('runtimeRefusal', () => {
  const cases: [version: string, refused: boolean][] = [
    ['v20.20.2', true],
    ['v22.14.0', true],
    ['v23.11.1', true],
    [`v${MIN_NODE_MAJOR}.0.0`, false],
    ['v24.21.0', false],
    ['v26.10.0', false],
    ['24.1.0', false],
    ['not a version', true],
    ['', true],
  ];
  for (const [version, refused] of cases) {
    it(`${version || '(empty)'}: ${refused ? 'refused' : 'runs'}`, () => {
      const why = runtimeRefusal(version, '/usr/bin/node');
      assert.equal(why !== undefined, refused);
      if (why !== undefined) {
        assert.match(why, new RegExp(`needs Node.js ${MIN_NODE_MAJOR} or newer`));
        assert.match(why, /\/usr\/bin\/node/);
        assert.match(why, /npm run setup/);
      }
    });
  }
});

describe('MIN_NODE_MAJOR', () => {
  it("is package.json's engines, which the setup and install scripts read", async () => {
    const pkg = JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8'));
    assert.equal(pkg.engines.node, `>=${MIN_NODE_MAJOR}`);
  });
});
