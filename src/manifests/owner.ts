// A runner process as the cluster records it in annotations: `<pid>@<host>`, written and read back here only.

/** The process that runs a run (or asks for its cancel), resolved at the CLI edge. */
export interface ProcessIdentity {
  readonly host: string;
  readonly pid: number;
}

/** `4242@ci-runner-1`. */
export function formatProcessIdentity(identity: ProcessIdentity): string {
  return `${identity.pid}@${identity.host}`;
}

/** The identity in an annotation's value, or undefined when it is not one. */
export function parseProcessIdentity(value: string | undefined): ProcessIdentity | undefined {
  const match = value === undefined ? null : /^(\d+)@(.+)$/.exec(value);
  return match ? { pid: Number(match[1]), host: match[2]! } : undefined;
}
