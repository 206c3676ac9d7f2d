/** docs/operations.md stays true: a settings row for every platform setting, and every tenant, key, audit, flows, logs, dev, storage and store command named. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Settings } from '../src/common/settings.js';

/** The repository root, found from this compiled file (dist/test/). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

describe('docs/operations.md', () => {
  const doc = readFileSync(resolve(ROOT, 'docs/operations.md'), 'utf8');

  it('has a settings-table row for every platform setting, with its minimum and read-at', () => {
    for (const def of Object.values(Settings)) {
      const row = doc.split('\n').find((l) => l.startsWith(`| \`${def.name}\` |`));
      assert.ok(row, `no settings row for ${def.name}`);
      const cells = row.split('|').map((c) => c.trim());
      assert.equal(cells[3], String(def.min), `minimum of ${def.name}`);
      assert.equal(cells[4], def.readAt, `read-at of ${def.name}`);
    }
  });

  it('names every tenant, key, audit, flows, logs, dev, storage and store command', () => {
    for (const cmd of [
      'svc tenant create',
      'svc tenant list',
      'svc tenant disable',
      'svc tenant enable',
      'svc keys create',
      'svc keys list',
      'svc keys revoke',
      'svc audit --tenant',
      'svc flows list',
      'svc flows show',
      'svc logs',
      'svc dev',
      'svc storage vacuum',
      'svc store migrate',
    ]) {
      assert.ok(doc.includes(cmd), `missing ${cmd}`);
    }
  });
});
