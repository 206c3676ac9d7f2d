/** `svc ui user add|list|disable|enable|passwd`: management UI accounts in `ui.db` (the operator acts as a sysadmin). */
import { Command, Option } from 'commander';
import { CLI_OPERATOR, ROLES } from '../app/accounts/roles.js';
import { addUiUser, listUiUsers, setUiUserDisabled, setUiUserPassword } from '../app/accounts/ui-accounts.js';
import { addStoreOptions, type StoreFlags } from './options.js';
import { readPassword } from './password-input.js';
import type { OpenedStore } from '../storage/index.js';
import { withStore } from './stores.js';

/** The UI accounts of a store, as the account use cases take them. */
function accounts(s: OpenedStore) {
  return { users: s.uiUsers, sessions: s.uiSessions };
}
import { formatTable, out } from './table.js';

export function registerUi(program: Command): void {
  const ui = program.command('ui').description('the management UI served at /ui');
  const user = ui
    .command('user')
    .description(
      'UI accounts: add, list, disable, enable, passwd (passwords are read from standard input or a prompt, never from a flag)',
    );
  const username = () => new Option('--username <name>', 'login name').makeOptionMandatory();
  user
    .command('add')
    .description('create a UI account; the password is read from standard input (first line) or prompted for')
    .addOption(username())
    .addOption(
      new Option('--role <role>', 'what the account may do (docs/ui.md)').choices([...ROLES]).makeOptionMandatory(),
    )
    .action(async (opts: { username: string; role: string } & StoreFlags) => {
      const password = await readPassword();
      const created = await withStore(opts, (s) =>
        addUiUser(accounts(s), { username: opts.username, role: opts.role, password }, CLI_OPERATOR),
      );
      out(`created UI user ${created.username} (${created.role})`);
    });
  user
    .command('list')
    .description('list UI accounts: username, role, status, created_at')
    .addOption(new Option('--json', 'print a JSON array'))
    .action(async (opts: { json?: boolean } & StoreFlags) => {
      const users = await withStore(opts, (s) => listUiUsers(accounts(s)), { readOnly: true });
      if (opts.json)
        return out(
          JSON.stringify(
            users.map((u) => ({
              username: u.username,
              role: u.role,
              status: u.disabled ? 'disabled' : 'active',
              created_at: u.createdAt,
            })),
            null,
            2,
          ),
        );
      if (users.length === 0)
        return out('No UI users. Create one with: svc ui user add --username <name> --role sysadmin');
      out(
        formatTable(
          ['USERNAME', 'ROLE', 'STATUS', 'CREATED_AT'],
          users.map((u) => [u.username, u.role, u.disabled ? 'disabled' : 'active', u.createdAt]),
        ),
      );
    });
  for (const [verb, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    user
      .command(verb)
      .description(disabled ? 'disable a UI account; its sessions end at once' : 'enable a disabled UI account')
      .addOption(username())
      .action(async (opts: { username: string } & StoreFlags) => {
        const changed = await withStore(opts, (s) =>
          setUiUserDisabled(accounts(s), opts.username, disabled, CLI_OPERATOR),
        );
        out(
          changed
            ? `UI user ${opts.username} ${verb}d`
            : `UI user ${opts.username} was already ${verb}d; nothing changed`,
        );
      });
  }
  user
    .command('passwd')
    .description("set a UI account's password (standard input or a prompt); its sessions end at once")
    .addOption(username())
    .action(async (opts: { username: string } & StoreFlags) => {
      const password = await readPassword('new password: ');
      await withStore(opts, (s) => setUiUserPassword(accounts(s), opts.username, password, CLI_OPERATOR));
      out(`password of UI user ${opts.username} changed; their sessions ended`);
    });
  for (const c of user.commands) addStoreOptions(c);
}
