/**
 * `svc seed`: a working demo in one command. Registers the tenants the demo flows name, deploys each
 * flow at 1.0.0, makes a demo API key per tenant and a UI user per role, and (unless told not to)
 * runs each flow once on its sample input through the executor every door uses. Running it again
 * creates nothing twice, and prints no secret it did not create.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isoNow } from '../../common/clock.js';
import { SvcError } from '../../common/errors.js';
import type { FlowResult, LoadedFlow } from '../../engine/index.js';
import { compileFlow } from '../../flow/compile.js';
import type { FlowIR } from '../../ir/types.js';
import type {
  ArtifactsStore,
  KeysStore,
  TenantAdmin,
  TenantsStore,
  UiSessionsStore,
  UiUsersStore,
} from '../../store/contracts/index.js';
import { createApiKey } from './keys.js';
import { CLI_OPERATOR, ROLES, type Role } from '../accounts/roles.js';
import { createTenant } from './tenants.js';
import { addUiUser } from '../accounts/ui-accounts.js';

export const DEMO_VERSION = '1.0.0';
/** The label of the key seed makes per tenant (a key with it is not made again). */
export const DEMO_KEY_LABEL = 'demo';

export interface SeedDeps {
  readonly tenants: TenantsStore;
  readonly tenantAdmin: TenantAdmin;
  readonly keys: KeysStore;
  readonly artifacts: ArtifactsStore;
  readonly users: UiUsersStore;
  readonly sessions: UiSessionsStore;
}

/** A demo flow as read from the directory: compiled, with its sample input. */
export interface DemoFlow {
  readonly file: string;
  readonly ir: FlowIR;
  readonly bytes: string;
  readonly hash: string;
  readonly source: string;
  /** `<name>.sample.json` beside the flow; null when there is none. */
  readonly sample: unknown;
}

/**
 * Every `*.flow.md` of the directory, compiled, with its sample. Nothing is changed by a failure here.
 * @throws SvcError for a missing directory, one without flows, a flow that does not compile or an unreadable sample
 */
export function readDemoFlows(dir: string): DemoFlow[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `demo directory ${dir} does not exist; pass --demo-dir <dir>, or leave it out to use ./examples/demo or the demo set installed with svc`,
    );
  const files = readdirSync(dir)
    .filter((n) => n.endsWith('.flow.md'))
    .sort();
  if (files.length === 0)
    throw new SvcError('SVC_ERR_INVALID_INPUT', `demo directory ${dir} holds no *.flow.md file; nothing was changed`);
  return files.map((name) => {
    const file = join(dir, name);
    const source = readFileSync(file, 'utf8');
    const r = compileFlow(source, { file });
    if (r.ir === undefined || r.bytes === undefined || r.hash === undefined) {
      throw new SvcError(
        'SVC_ERR_INVALID_INPUT',
        `${file} does not compile; nothing was changed:\n${r.diagnostics.map((d) => `  ${d.file ?? file}:${d.line}: ${d.message}`).join('\n')}`,
      );
    }
    const samplePath = join(dir, `${basename(name, '.flow.md')}.sample.json`);
    let sample: unknown = null;
    if (existsSync(samplePath)) {
      try {
        sample = JSON.parse(readFileSync(samplePath, 'utf8'));
      } catch (err) {
        throw new SvcError(
          'SVC_ERR_INVALID_INPUT',
          `${samplePath} is not JSON: ${(err as Error).message}; nothing was changed`,
        );
      }
    }
    return { file, ir: r.ir, bytes: r.bytes, hash: r.hash, source, sample };
  });
}

/** One line of progress, as it happens. */
export type SeedProgress = (line: string) => void;

/** What this run created that must be shown once. */
export interface SeedSecrets {
  /** tenant -> raw key, for keys created by this run. */
  readonly keys: Record<string, string>;
  /** username -> { role, password }, for users created by this run. */
  readonly users: Record<string, { role: Role; password: string }>;
}

export interface SeedResult {
  readonly flows: readonly DemoFlow[];
  readonly secrets: SeedSecrets;
  /** Flows whose run failed (the command's exit status). */
  readonly failed: readonly string[];
}

/** Runs a deployed flow once through the executor (the CLI builds it as `svc serve` does). */
export type DemoRunner = (flow: LoadedFlow, input: unknown) => Promise<FlowResult>;

export async function seedDemo(
  deps: SeedDeps,
  flows: readonly DemoFlow[],
  opts: { runner?: DemoRunner },
  say: SeedProgress,
): Promise<SeedResult> {
  const tenants = [...new Set(flows.map((f) => f.ir.tenant))].sort();
  for (const t of tenants) {
    const existing = await deps.tenants.get(t);
    if (existing?.status === 'disabled')
      throw new SvcError(
        'SVC_ERR_TENANT_NOT_FOUND',
        `tenant "${t}" is disabled; enable it first with: svc tenant enable --id ${t}`,
      );
  }
  for (const t of tenants) {
    if ((await deps.tenants.get(t)) !== undefined) say(`tenant ${t}: exists, left alone`);
    else {
      await createTenant(deps, { id: t, displayName: `Demo (${t})` }, { actor: 'seed' });
      say(`tenant ${t}: registered`);
    }
  }
  for (const f of flows) {
    const { tenant, flow } = f.ir;
    const there = await deps.artifacts.getByVersion(tenant, flow, DEMO_VERSION);
    if (there?.hash === f.hash) say(`flow ${tenant}/${flow} ${DEMO_VERSION}: already deployed, identical, left alone`);
    else if (there !== undefined)
      say(
        `flow ${tenant}/${flow} ${DEMO_VERSION}: a different ${DEMO_VERSION} is deployed; left alone (deploy the demo under a new version with svc deploy ${f.file} -v <v>)`,
      );
    else {
      await deps.artifacts.publish({
        tenant,
        name: flow,
        version: DEMO_VERSION,
        bytes: f.bytes,
        hash: f.hash,
        createdAt: isoNow(),
        source: f.source,
      });
      say(`flow ${tenant}/${flow} ${DEMO_VERSION}: deployed (${f.hash.slice(0, 12)})`);
    }
  }
  const keys: Record<string, string> = {};
  for (const t of tenants) {
    if ((await deps.keys.list(t)).some((k) => k.label === DEMO_KEY_LABEL && k.revokedAt === null))
      say(`API key "${DEMO_KEY_LABEL}" of ${t}: exists, not recreated (its key was shown when it was made)`);
    else {
      keys[t] = (await createApiKey(deps, { tenant: t, label: DEMO_KEY_LABEL })).rawKey;
      say(`API key "${DEMO_KEY_LABEL}" of ${t}: created`);
    }
  }
  const users: Record<string, { role: Role; password: string }> = {};
  for (const role of ROLES) {
    const username = `demo-${role}`;
    if ((await deps.users.credentials(username)) !== undefined) say(`UI user ${username}: exists, not recreated`);
    else {
      const password = randomBytes(12).toString('base64url');
      await addUiUser(deps, { username, role, password }, CLI_OPERATOR);
      users[username] = { role, password };
      say(`UI user ${username} (${role}): created`);
    }
  }
  const failed: string[] = [];
  if (opts.runner !== undefined) {
    for (const f of flows) {
      const { tenant, flow } = f.ir;
      const ref = await deps.artifacts.resolveLatest(tenant, flow);
      if (ref === undefined) continue;
      const loaded: LoadedFlow = { ir: f.ir, version: ref.version, hash: ref.hash, created_at: ref.created_at };
      try {
        const r = await opts.runner(loaded, f.sample);
        say(`run ${tenant}/${flow}: ${r.status}${r.faultHandled ? ' (fault handled)' : ''} ${short(r.output)}`);
      } catch (err) {
        failed.push(`${tenant}/${flow}`);
        const status = err instanceof SvcError ? err.status : 500;
        say(`run ${tenant}/${flow}: FAILED ${status} ${(err as { detail?: string }).detail ?? (err as Error).message}`);
      }
    }
  }
  return { flows, secrets: { keys, users }, failed };
}

function short(output: unknown): string {
  const text =
    typeof output === 'string'
      ? output
      : (JSON.stringify(output, (_k, v: unknown) =>
          typeof v === 'object' && v !== null && 'xml' in v ? (v as { xml: string }).xml : v,
        ) ?? '');
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
