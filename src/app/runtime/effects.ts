/** The effect handlers the engine runs with, built once per process from the pieces in engine/effects. */
import { stripCredentialHeaders } from '../../common/mask.js';
import type { SettingName } from '../../common/settings.js';
import { compileTemplate } from '../../expr/template.js';
import { AgentPool } from '../../engine/effects/egress-agents.js';
import { createHttpEgress, type HttpEgressHandler } from '../../engine/effects/http-egress.js';
import { OAuth2TokenCache } from '../../engine/effects/oauth2-token-cache.js';
import type { EffectCall, EffectHandler } from '../../engine/index.js';
import type { StepIR } from '../../ir/types.js';
import type { Dispatcher } from 'undici';

export interface HttpEgressEffect {
  readonly handler: EffectHandler;
  close(): Promise<void>;
}

/** Where calls go and what `${VAR}` in an endpoint reads, when not the network and the process's environment (`svc test`). */
export interface EgressSurroundings {
  readonly env?: NodeJS.ProcessEnv;
  readonly dispatcherFor?: (step: StepIR) => Dispatcher;
}

/** http_egress with shared connection pools and token cache; `egress_traced` rows while tracing is on. */
export function httpEgressEffect(
  setting: (name: SettingName) => number,
  surroundings: EgressSurroundings = {},
): HttpEgressEffect {
  const agents = new AgentPool();
  const tokens = new OAuth2TokenCache();
  const platformMaxMessageBytes = () => setting('max_message_bytes');
  const { env, dispatcherFor } = surroundings;
  const plain: HttpEgressHandler = createHttpEgress({ agents, tokens, platformMaxMessageBytes, env, dispatcherFor });
  const handler: EffectHandler = async (call: EffectCall) => {
    const egress = call.trace
      ? createHttpEgress({
          agents,
          tokens,
          platformMaxMessageBytes,
          env,
          dispatcherFor,
          onExchange: (x) =>
            call.events.emit({
              event: 'egress_traced',
              correlation_id: call.correlationId,
              tenant: call.ir.tenant,
              flow: call.ir.flow,
              step: x.step,
              http_status: x.status,
              reason: x.error,
              payload: { headers: stripCredentialHeaders(x.headers), body: x.body },
              mask: call.mask,
              trace_id: call.span.traceId,
            }),
        })
      : plain;
    const render = (template: string) => compileTemplate(template).render(call.ctx);
    return egress(call.step, call.message, call.ctx, render, {
      flowMaxMessageBytes: call.ir.maxMessageBytes,
      trace: { span: call.span, tenant: call.ir.tenant, flow: call.ir.flow },
    });
  };
  return { handler, close: () => agents.close() };
}
