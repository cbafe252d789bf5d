/**
 * What every node command needs without the registry's rules: its error type and how a node is
 * shown. Kept apart from service.ts so a list command does not load the token code (node:crypto).
 */
import type { NodeKind, NodeRow } from '../db/schema.ts'
import { formatMillis } from '../timestamps.ts'

/**
 * A registry problem (nodes, administrators) the CLI prints as one line: exit 1, or 2 (`usage`)
 * for an argument that is malformed whatever the registry holds (a kind, an id, a fingerprint).
 */
export class RegistryError extends Error {
  override readonly name = 'RegistryError'
  readonly usage: boolean
  constructor(message: string, usage = false) {
    super(message)
    this.usage = usage
  }
}

export type Credential =
  | { type: 'token' }
  | { type: 'cert_name'; name: string }
  | { type: 'cert_fingerprint'; sha256: string }

/**
 * A gate pulls every 30 s, backing off to 5 minutes; websignal sends at least every 2 minutes
 * (an empty batch when it has nothing): 10 minutes without a word is silence (nodes/health.ts).
 */
export const SILENT_AFTER_MS = 10 * 60_000
/** Kinds heard from regularly; a legacy log watcher sends only when it has signals. */
const POLLING: ReadonlySet<NodeKind> = new Set(['sshgate', 'tlsgate', 'websignal'])
export const NODE_STATES = ['active', 'silent', 'disabled'] as const
export type NodeState = (typeof NODE_STATES)[number]
/** How the CLI's lists colour a state. */
export const STATE_STYLE = { active: 'green', silent: 'yellow', disabled: 'red' } as const

/**
 * `disabled`; `silent`: an active gate or websignal node last heard from over 10 minutes ago (and over 10 minutes
 * after `listeningSince`: gates are not blamed for this server's own downtime); else `active`,
 * also when never seen yet.
 */
export function nodeState(
  n: Pick<NodeRow, 'kind' | 'active' | 'last_seen_ms'>,
  now: number,
  listeningSince = 0,
): NodeState {
  if (n.active !== 1) return 'disabled'
  if (!POLLING.has(n.kind) || n.last_seen_ms === null) return 'active'
  return now - Math.max(Number(n.last_seen_ms), listeningSince) > SILENT_AFTER_MS ? 'silent' : 'active'
}

export function describeNode(n: NodeRow) {
  return {
    instance_id: n.instance_id,
    kind: n.kind,
    active: n.active === 1,
    state: nodeState(n, Date.now()),
    auth: n.token_hash
      ? 'token'
      : n.cert_fingerprint
        ? `cert sha256:${n.cert_fingerprint}`
        : `cert name:${n.cert_name}`,
    created_at: formatMillis(Number(n.created_ms)),
    last_seen_at: n.last_seen_ms === null ? null : formatMillis(Number(n.last_seen_ms)),
    /** The client certificate it last presented; null for token nodes (and before the first request). */
    certificate_expires_at: n.cert_expires_ms === null ? null : formatMillis(Number(n.cert_expires_ms)),
  }
}
