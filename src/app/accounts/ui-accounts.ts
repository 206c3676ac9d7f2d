/**
 * Management UI accounts and sessions: bootstrap, user administration (the `svc ui user` commands and
 * the UI's Users page), login with throttling, server-side sessions with idle and absolute timeouts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { isoNow } from '../../common/clock.js';
import { SvcError } from '../../common/errors.js';
import type { UiSessionsStore, UiUsersStore, UiUser } from '../../store/contracts/index.js';
import type { LoginThrottle } from './login-throttle.js';
import { dummyHash, hashPassword, passwordProblem, verifyPassword } from './password.js';
import { isRole, ROLES, type Actor, type Role } from './roles.js';

export interface UiAccountDeps {
  readonly users: UiUsersStore;
  readonly sessions: UiSessionsStore;
}

/** Session lifetimes. Milliseconds. */
export interface SessionTimeouts {
  /** Ends a session unused this long. @default 30 minutes */
  readonly idleMs: number;
  /** Ends a session this long after login, used or not. @default 12 hours */
  readonly absoluteMs: number;
}

export const DEFAULT_SESSION_TIMEOUTS: SessionTimeouts = Object.freeze({
  idleMs: 30 * 60_000,
  absoluteMs: 12 * 3_600_000,
});

const USERNAME = /^[a-z0-9][a-z0-9._@-]{0,63}$/;

function checkUsername(username: string): void {
  if (!USERNAME.test(username)) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `username "${username}" must be 1 to 64 characters: lowercase letters, digits, ".", "_", "@" and "-", starting with a letter or digit`,
    );
  }
}

function checkPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_INPUT', problem);
}

function checkRole(role: string): asserts role is Role {
  if (!isRole(role)) throw new SvcError('SVC_ERR_INVALID_INPUT', `role "${role}" is not one of ${ROLES.join(', ')}`);
}

/** Only a sysadmin administers UI users (the operator at a shell acts as one). */
function requireSysadmin(actor: Actor): void {
  if (actor.role !== 'sysadmin')
    throw new SvcError('SVC_ERR_FORBIDDEN', `only a sysadmin may manage UI users; ${actor.name} is ${actor.role}`);
}

/** Creates a user. @throws SvcError 400 for a bad username, role or password, 409 for a taken username */
export async function addUiUser(
  deps: Pick<UiAccountDeps, 'users'>,
  input: { username: string; role: string; password: string },
  actor: Actor,
): Promise<UiUser> {
  requireSysadmin(actor);
  checkUsername(input.username);
  checkRole(input.role);
  checkPassword(input.password);
  const user = await deps.users.insert({
    username: input.username,
    role: input.role,
    passwordHash: await hashPassword(input.password),
    at: isoNow(),
  });
  if (user === undefined) throw new SvcError('SVC_ERR_CONFLICT', `UI user "${input.username}" already exists`);
  return user;
}

export async function listUiUsers(deps: Pick<UiAccountDeps, 'users'>): Promise<UiUser[]> {
  return deps.users.list();
}

/** Disables or enables a user; disabling ends their sessions at once. Returns whether anything changed. */
export async function setUiUserDisabled(
  deps: UiAccountDeps,
  username: string,
  disabled: boolean,
  actor: Actor,
): Promise<boolean> {
  requireSysadmin(actor);
  const found = await deps.users.credentials(username);
  if (found === undefined) throw new SvcError('SVC_ERR_NOT_FOUND', `no UI user "${username}"`);
  const changed = await deps.users.setDisabled(username, disabled, isoNow());
  if (disabled) await deps.sessions.deleteForUser(found.user.id);
  return changed;
}

/** Sets a new password; every session of the user ends. */
export async function setUiUserPassword(
  deps: UiAccountDeps,
  username: string,
  password: string,
  actor: Actor,
): Promise<void> {
  requireSysadmin(actor);
  checkPassword(password);
  const found = await deps.users.credentials(username);
  if (found === undefined) throw new SvcError('SVC_ERR_NOT_FOUND', `no UI user "${username}"`);
  await deps.users.setPasswordHash(username, await hashPassword(password), isoNow());
  await deps.sessions.deleteForUser(found.user.id);
}

/** What bootstrap did, for the boot output (never the password). */
export type BootstrapOutcome =
  { created: true; username: string } | { created: false; reason: 'users exist' | 'variables not set' };

/**
 * The spec's bootstrap: when `ui.db` has no users and both `SVC_UI_ADMIN_USER` and
 * `SVC_UI_ADMIN_PASS` are set, that account is created as a sysadmin; otherwise nothing happens.
 */
export async function bootstrapUiAdmin(
  deps: Pick<UiAccountDeps, 'users'>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<BootstrapOutcome> {
  if ((await deps.users.count()) > 0) return { created: false, reason: 'users exist' };
  const username = env.SVC_UI_ADMIN_USER?.trim();
  const password = env.SVC_UI_ADMIN_PASS;
  if (!username || !password) return { created: false, reason: 'variables not set' };
  checkUsername(username);
  checkPassword(password);
  const user = await deps.users.insertIfNone({
    username,
    role: 'sysadmin',
    passwordHash: await hashPassword(password),
    at: isoNow(),
  });
  return user === undefined ? { created: false, reason: 'users exist' } : { created: true, username };
}

/** A signed-in user's session as the UI sees it. */
export interface UiSession {
  /** The cookie value (never stored: the database holds its SHA-256). */
  readonly token: string;
  readonly user: UiUser;
}

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Checks a login and opens a new session (a fresh id every time). Refused alike for an unknown
 * user, a wrong password and a disabled account (401), after the same scrypt work; 429 before any
 * hash while the (account, address) pair or the address is throttled, or while too many hashes
 * are in flight (LoginThrottle).
 */
export async function login(
  deps: UiAccountDeps,
  throttle: LoginThrottle,
  input: { username: string; password: string; address: string },
  now = Date.now(),
): Promise<UiSession> {
  const attempt = throttle.begin(input.username, input.address);
  if (attempt.refused !== undefined) {
    const wait = attempt.retryAfterSecs;
    throw new SvcError(
      'SVC_ERR_RATE_LIMITED',
      attempt.refused === 'busy'
        ? 'too many logins are being checked; try again in a moment'
        : `too many failed logins; try again in ${wait < 60 ? `${wait} second(s)` : `${Math.ceil(wait / 60)} minute(s)`}`,
      { headers: { 'retry-after': String(wait) } },
    );
  }
  let found;
  let accepted = false;
  try {
    found = await deps.users.credentials(input.username);
    const ok = await verifyPassword(input.password, found?.passwordHash ?? (await dummyHash()));
    accepted = ok && found !== undefined && !found.user.disabled;
  } finally {
    // Whatever happened (a storage error included), the attempt ends here and stays counted.
    if (!accepted) attempt.failed();
  }
  if (!accepted || found === undefined) throw new SvcError('SVC_ERR_UNAUTHORIZED', 'unknown user or wrong password');
  attempt.succeeded();
  const token = randomBytes(32).toString('base64url');
  await deps.sessions.insert({ idHash: hashToken(token), userId: found.user.id, createdAtMs: now, lastSeenMs: now });
  return { token, user: found.user };
}

/** The session behind a cookie value, or undefined (unknown, past a timeout, or its user disabled); a valid one is touched. */
export async function resumeSession(
  deps: UiAccountDeps,
  token: string | undefined,
  timeouts: SessionTimeouts = DEFAULT_SESSION_TIMEOUTS,
  now = Date.now(),
): Promise<UiSession | undefined> {
  if (token === undefined || token === '') return undefined;
  const idHash = hashToken(token);
  const row = await deps.sessions.get(idHash);
  if (row === undefined) return undefined;
  const user = await deps.users.byId(row.userId);
  if (
    user === undefined ||
    user.disabled ||
    now - row.lastSeenMs > timeouts.idleMs ||
    now - row.createdAtMs > timeouts.absoluteMs
  ) {
    await deps.sessions.delete(idHash);
    return undefined;
  }
  await deps.sessions.touch(idHash, now);
  return { token, user };
}

/** Ends the session behind a cookie value. */
export async function logout(deps: UiAccountDeps, token: string | undefined): Promise<void> {
  if (token !== undefined && token !== '') await deps.sessions.delete(hashToken(token));
}

/**
 * The key that signs the UI's CSRF tokens: made once (32 random bytes) and kept with the sessions,
 * so every process serving the same store accepts the tokens of the others, and a restart keeps them valid.
 */
export async function csrfSigningKey(deps: Pick<UiAccountDeps, 'sessions'>): Promise<string> {
  return deps.sessions.csrfKey(() => randomBytes(32).toString('base64url'));
}
