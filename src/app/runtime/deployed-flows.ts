/**
 * The start-up scan of every flow's latest artifact: what the server must refuse to start on
 * (unset config, the bare `ctx.X` credential spelling), what it only reports (an unreadable
 * artifact), and the lists the doors and the scheduler need. The same scan through the storage
 * contract serves the commands that look at the deployed flows of either store (`svc config
 * check`, `svc cert reconcile`).
 */
import { IntegrityError } from '../../common/errors.js';
import type { FlowIR, StepIR } from '../../ir/types.js';
import type { ArtifactsStore, LatestRef } from '../../store/contracts/index.js';
import { startupConfigRefusals, type FlowConfigNeeds } from './config-check.js';
import { irOfArtifact, type FlowLoader } from './flow-loader.js';

export interface DeployedFlows {
  readonly flows: readonly FlowIR[];
  /** Each artifact that could not be read, and why (logged at ERROR, boot goes on). */
  readonly unreadable: readonly UnreadableFlow[];
}

export interface UnreadableFlow {
  readonly tenant: string;
  readonly flow: string;
  /** `version <v>: <why>` */
  readonly error: string;
}

/**
 * Reads every latest artifact through the server's loader, synchronously, on one read snapshot
 * (the start-up scan, the gRPC door's routes). Throws when the registry cannot be listed (the
 * server must stop).
 */
export function scanDeployedFlows(loader: FlowLoader): DeployedFlows {
  return loader.inOneRead(() => scanLatest(loader));
}

function scanLatest(loader: FlowLoader): DeployedFlows {
  const flows: FlowIR[] = [];
  const unreadable: UnreadableFlow[] = [];
  for (const ref of loader.latestRefs()) {
    try {
      flows.push(loader.peekIr(ref.hash));
    } catch (err) {
      unreadable.push(unreadableFlow(ref, err));
    }
  }
  return { flows, unreadable };
}

/** What the scan of the storage contract reads: the latest refs and the artifacts they name. */
export type LatestArtifactReads = Pick<ArtifactsStore, 'listLatest' | 'getArtifact'>;

/**
 * Reads every latest artifact through the storage contract, on the SQLite registry or the
 * PostgreSQL store alike (a command's one-off look; artifacts are immutable by hash, so a deploy
 * between the listing and a read changes no answer). Throws when the registry cannot be listed.
 */
export async function scanLatestArtifacts(reads: LatestArtifactReads): Promise<DeployedFlows> {
  const flows: FlowIR[] = [];
  const unreadable: UnreadableFlow[] = [];
  for (const ref of await reads.listLatest()) {
    try {
      flows.push(irOfArtifact(ref.hash, await reads.getArtifact(ref.hash)));
    } catch (err) {
      unreadable.push(unreadableFlow(ref, err));
    }
  }
  return { flows, unreadable };
}

/** An artifact that failed its integrity check is reported; any other failure (the registry unreadable) is thrown. */
function unreadableFlow(ref: LatestRef, err: unknown): UnreadableFlow {
  if (!(err instanceof IntegrityError)) throw err;
  return { tenant: ref.tenant, flow: ref.name, error: `version ${ref.version}: ${err.message}` };
}

const BARE_CTX = /^\s*ctx(\.[A-Za-z_]\w*|\[[^\]]*\])+\s*$/;

/** The credential keys written as bare `ctx.X` (no longer read): each one stops the server. */
export function bareCredentialRefusals(flows: readonly FlowIR[]): string[] {
  const out: string[] = [];
  for (const ir of flows) {
    for (const step of [...ir.steps, ...(ir.fault?.steps ?? [])]) {
      for (const [key, value] of credentialTemplates(step)) {
        if (value !== undefined && BARE_CTX.test(value)) {
          out.push(
            `flow ${ir.tenant}/${ir.flow} step '${step.name}': ${key} uses the bare spelling '${value.trim()}', which is no longer read; write "{{ ${value.trim()} }}" and re-deploy under a new version`,
          );
        }
      }
    }
  }
  return out;
}

function credentialTemplates(step: StepIR): [string, string | undefined][] {
  const h = step.http;
  if (h === undefined) return [];
  const o = h.oauth2;
  return [
    ['bearer_token', h.bearerToken],
    ['oauth2_token_url', o?.tokenUrl],
    ['oauth2_client_id', o?.clientId],
    ['oauth2_client_secret', o?.clientSecret],
    ['oauth2_scope', o?.scope],
    ['oauth2_audience', o?.audience],
  ];
}

/** Every reason the server must not start, from the scanned flows and the environment. */
export function startupRefusals(flows: readonly FlowIR[], env: NodeJS.ProcessEnv = process.env): string[] {
  return [
    ...startupConfigRefusals(
      flows.map((f) => ({ tenant: f.tenant, flow: f.flow, config: f.config })),
      env,
    ),
    ...bareCredentialRefusals(flows),
  ];
}

/** What `svc config check` reads: each latest artifact's `config:` keys, and the unreadable ones. */
export async function configNeeds(
  reads: LatestArtifactReads,
): Promise<{ flows: FlowConfigNeeds[]; unreadable: UnreadableFlow[] }> {
  const scan = await scanLatestArtifacts(reads);
  return {
    flows: scan.flows.map((f) => ({ tenant: f.tenant, flow: f.flow, config: f.config ?? [] })),
    unreadable: [...scan.unreadable],
  };
}
