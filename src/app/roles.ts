/** The roles of the people who operate the service (spec: "Management UI accounts"); what each may do is decided in app/. */
export const ROLES = ['sysadmin', 'support', 'developer'] as const;

export type Role = (typeof ROLES)[number];

/** Who is acting: their role, and the name recorded on the audit entries they cause (e.g. `cli`, `ui:alice`). */
export interface Actor {
  readonly role: Role;
  readonly name: string;
}

/** The operator holding the state directory at a shell: a sysadmin (spec-level: they could edit the files anyway). */
export const CLI_OPERATOR: Actor = Object.freeze({ role: 'sysadmin', name: 'cli' });
