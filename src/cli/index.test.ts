import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildCli } from './index.js';

it('a run naming a command loads a program holding that command (and only its group), for every command', async () => {
  const all = (await buildCli()).commands.map((c) => c.name());
  assert.ok(all.length >= 20, all.join(' '));
  for (const name of all) {
    const only = (await buildCli(['node', 'svc', name, '--help'])).commands.map((c) => c.name());
    assert.ok(only.includes(name), `svc ${name} loads ${only.join(', ')}`);
    assert.ok(only.length < all.length, `svc ${name} loads every group`);
  }
});

it('help, an option first, or an unknown word load every command (help lists them all; an unknown one is reported as such)', async () => {
  const all = (await buildCli()).commands.map((c) => c.name());
  for (const argv of [
    ['node', 'svc'],
    ['node', 'svc', '--help'],
    ['node', 'svc', 'help', 'serve'],
    ['node', 'svc', 'no-such-command'],
  ]) {
    assert.deepEqual(
      (await buildCli(argv)).commands.map((c) => c.name()),
      all,
      argv.join(' '),
    );
  }
});
