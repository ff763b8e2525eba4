// The spindle.mill.v1 messages as plain typed objects (protobufjs's camelCase field names), one tagged union for all 13 kinds.

export const PROTOCOL_VERSION = 1;
/** The most a frame's payload may be, either way (the mill's limit). */
export const MAX_FRAME_BYTES = 8 * 1024 * 1024;
/** Events per EventBatch at most. */
export const MAX_BATCH_EVENTS = 128;
/** The longest `error` text an event may carry. */
export const MAX_ERROR_BYTES = 65_536;

export const REJECT_CLASS = { unspecified: 0, transient: 1, incompatible: 2 } as const;
export const NONTERMINAL_STATUS = { unspecified: 0, running: 1 } as const;
export const TERMINAL_STATUS = { unspecified: 0, success: 1, failed: 2, timeout: 3, cancelled: 4 } as const;
export type TerminalStatusName = Exclude<keyof typeof TERMINAL_STATUS, "unspecified">;

export interface Hello {
  readonly protocolVersion: number;
  readonly arch: string;
  readonly labels: readonly string[];
  readonly epoch: string;
}
export interface Resume {
  readonly epoch: string;
  readonly ackSeqno: number;
}
export interface EngineAvailability {
  readonly available: boolean;
  readonly load: Readonly<Record<string, number>>;
}
export interface NodeSnapshot {
  readonly seqno: number;
  readonly engines: Readonly<Record<string, EngineAvailability>>;
  readonly activeLeaseIds: readonly string[];
}
export interface ReserveSeat {
  readonly leaseId: string;
  readonly targetEngine: string;
  readonly rawPipelineJson: string;
  readonly rawWorkflowJson: string;
  readonly knot: string;
  readonly rkey: string;
  readonly ttlSeconds: number;
}
export interface ReserveResult {
  readonly leaseId: string;
  readonly accepted: boolean;
  readonly rejectReason: string;
  readonly rejectClass: number;
}
export interface SecretPair {
  readonly key: string;
  readonly value: string;
}
export interface CommitLease {
  readonly leaseId: string;
  readonly secrets: readonly SecretPair[];
}
export interface LeaseRef {
  readonly leaseId: string;
}
export interface CancelAttempt {
  readonly leaseId: string;
  readonly reason: string;
}
export interface StatusEvent {
  readonly status: number;
  readonly error: string;
  readonly exitCode: number;
}
export interface LogArtifact {
  readonly ref: string;
  readonly hash: string;
}
export interface AttemptResult {
  readonly status: number;
  readonly error: string;
  readonly exitCode: number;
  readonly logArtifact?: LogArtifact;
}
export interface MillEvent {
  readonly seqno: number;
  readonly leaseId: string;
  readonly statusEvent?: StatusEvent;
  readonly attemptResult?: AttemptResult;
}
export interface EventBatch {
  readonly epoch: string;
  readonly events: readonly MillEvent[];
}
export interface Ack {
  readonly epoch: string;
  readonly upToSeqno: number;
}
export interface LiveLog {
  readonly leaseId: string;
  readonly rawJson: Uint8Array;
}

/** Each field of Message, by its name, with its body. */
export interface MillBodies {
  hello: Hello;
  resume: Resume;
  nodeSnapshot: NodeSnapshot;
  reserveSeat: ReserveSeat;
  reserveResult: ReserveResult;
  commitLease: CommitLease;
  committed: LeaseRef;
  releaseLease: LeaseRef;
  cancelAttempt: CancelAttempt;
  cancelAck: LeaseRef;
  eventBatch: EventBatch;
  ack: Ack;
  liveLog: LiveLog;
}
export type MillKind = keyof MillBodies;
/** One Message: which of its fields is set, and that field's body. */
export type MillMessage = { [K in MillKind]: { readonly kind: K; readonly body: MillBodies[K] } }[MillKind];

/** Message's fields in field-number order (1..13). */
export const MILL_KINDS: readonly MillKind[] = [
  "hello",
  "resume",
  "nodeSnapshot",
  "reserveSeat",
  "reserveResult",
  "commitLease",
  "committed",
  "releaseLease",
  "cancelAttempt",
  "cancelAck",
  "eventBatch",
  "ack",
  "liveLog",
];

/** Builds a message of one kind (a typed shorthand for tests and the session). */
export function millMessage<K extends MillKind>(kind: K, body: MillBodies[K]): MillMessage {
  return { kind, body } as MillMessage;
}
