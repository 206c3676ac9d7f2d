/**
 * Configuration keys declared by flows (`config:` front matter) against the environment
 * (`SVC_CONFIG_<KEY>`): the report behind `svc config check` and the start-up refusal of `svc serve`.
 * Values are never returned, printed or logged; only whether they are set.
 */

/** What one deployed flow (its latest artifact) declares. */
export interface FlowConfigNeeds {
  readonly tenant: string;
  readonly flow: string;
  readonly config: readonly string[];
}

/** Set-but-empty is accepted at start-up; only MISSING refuses. */
export type ConfigKeyState = 'set' | 'set-but-empty' | 'MISSING';

export interface ConfigKeyReport {
  readonly tenant: string;
  readonly flow: string;
  readonly key: string;
  /** The environment variable read, e.g. `SVC_CONFIG_PARTNER_URL`. */
  readonly variable: string;
  readonly state: ConfigKeyState;
}

/** `SVC_CONFIG_<KEY>`: the key uppercased; any character outside [A-Z0-9_] becomes `_`. */
export function configVariable(key: string): string {
  return `SVC_CONFIG_${key.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}`;
}

/** One row per (flow, key), in the order given. */
export function checkFlowConfig(
  flows: Iterable<FlowConfigNeeds>,
  env: NodeJS.ProcessEnv = process.env,
): ConfigKeyReport[] {
  const out: ConfigKeyReport[] = [];
  for (const f of flows) {
    for (const key of f.config) {
      const variable = configVariable(key);
      const value = env[variable];
      const state: ConfigKeyState = value === undefined ? 'MISSING' : value === '' ? 'set-but-empty' : 'set';
      out.push({ tenant: f.tenant, flow: f.flow, key, variable, state });
    }
  }
  return out;
}

export function missingConfig(reports: readonly ConfigKeyReport[]): ConfigKeyReport[] {
  return reports.filter((r) => r.state === 'MISSING');
}

/** The sentence `svc serve` refuses to start with, naming tenant, flow, key and variable. */
export function configRefusalMessage(missing: ConfigKeyReport): string {
  return (
    `refusing to start: flow '${missing.tenant}/${missing.flow}' declares config key '${missing.key}' ` +
    `but ${missing.variable} is not set; set ${missing.variable} in the environment or .env (an empty value is accepted)`
  );
}

/** Throws-free start-up check: the refusal messages, one per missing key (empty when all are set). */
export function startupConfigRefusals(
  flows: Iterable<FlowConfigNeeds>,
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  return missingConfig(checkFlowConfig(flows, env)).map(configRefusalMessage);
}

/** Human-readable lines for `svc config check`: `<tenant>/<flow>  <key>  <VARIABLE>  <state>`. */
export function formatConfigReport(reports: readonly ConfigKeyReport[]): string[] {
  return reports.map((r) => `${r.tenant}/${r.flow}\t${r.key}\t${r.variable}\t${r.state}`);
}
