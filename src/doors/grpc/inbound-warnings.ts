/** `svc serve` without `--grpc-port`: a deployed flow with `inbound:` is unreachable, and the log says so. */
import type { Logger } from '../../common/logger.js';

/** The part of a deployed flow (its latest IR) this check reads. */
export interface InboundFlow {
  readonly tenant: string;
  readonly flow: string;
  /** The IR's `inbound` (front-matter `inbound:`). */
  readonly inbound?: string | undefined;
  readonly grpcMethod?: string | undefined;
}

/** One warning per flow declaring `inbound:` when no gRPC door listens. */
export function inboundWithoutDoorWarnings(flows: readonly InboundFlow[]): string[] {
  return flows
    .filter((f) => f.inbound !== undefined)
    .map(
      (f) =>
        `flow ${f.tenant}/${f.flow} declares inbound: ${f.inbound}${f.grpcMethod ? ` (${f.grpcMethod})` : ''}, but no gRPC door listens; start svc serve with --grpc-port <n>`,
    );
}

/** Called by the service at startup (the lead passes the deployed flows) when `--grpc-port` is absent. */
export function warnInboundWithoutDoor(flows: readonly InboundFlow[], log: Pick<Logger, 'warn'>): number {
  const warnings = inboundWithoutDoorWarnings(flows);
  for (const w of warnings) log.warn(w);
  return warnings.length;
}
