import assert from 'node:assert/strict';
import { test } from 'node:test';
import { can, ROLES, type Permission, type Role } from './roles.js';

/** The matrix of docs/ui.md, cell by cell. */
const MATRIX: Record<Permission, readonly Role[]> = {
  read: ['sysadmin', 'support', 'developer'],
  read_traces: ['support'],
  toggle_trace: ['sysadmin'],
  manage_dead_letters: ['sysadmin', 'support'],
  manage_tenants: ['sysadmin'],
  manage_keys: ['sysadmin'],
  edit_settings: ['sysadmin'],
  manage_ui_users: ['sysadmin'],
};

for (const [permission, allowed] of Object.entries(MATRIX) as [Permission, readonly Role[]][]) {
  for (const role of ROLES) {
    test(`a ${role} ${allowed.includes(role) ? 'may' : 'may not'} ${permission}`, () => {
      assert.equal(can({ role, name: role }, permission), allowed.includes(role));
    });
  }
}
