import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Command } from 'commander';
import { buildCli } from './index.js';

/** Every command with its full name (`svc ui user list`), depth first. */
function commands(cmd: Command, prefix = ''): [string, Command][] {
  const name = prefix === '' ? cmd.name() : `${prefix} ${cmd.name()}`;
  return [[name, cmd], ...cmd.commands.flatMap((c) => commands(c, name))];
}

/** Commands that print a listing but are not named list or show. */
const OTHER_LISTINGS = ['svc audit', 'svc logs', 'svc config check', 'svc cert reconcile', 'svc simulate'];

it('every listing command (each list and show, and the other listings) takes --json', async () => {
  const all = commands(await buildCli());
  const listings = all.filter(([name, c]) => ['list', 'show'].includes(c.name()) || OTHER_LISTINGS.includes(name));
  assert.ok(listings.length >= 15, listings.map(([n]) => n).join(', '));
  const missing = listings.filter(([, c]) => !c.options.some((o) => o.long === '--json')).map(([n]) => n);
  assert.deepEqual(missing, []);
});
