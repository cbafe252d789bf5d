/**
 * What every node command needs without the registry's rules: its error type and how a node is
 * shown. Kept apart from service.ts so a list command does not load the token code (node:crypto).
 */
import type { NodeRow } from '../db/schema.ts'
import { formatMillis } from '../timestamps.ts'

/** A registry problem (nodes, administrators) the CLI prints as one line (exit 1). */
export class RegistryError extends Error {
  override readonly name = 'RegistryError'
}

export type Credential =
  | { type: 'token' }
  | { type: 'cert_name'; name: string }
  | { type: 'cert_fingerprint'; sha256: string }

export function describeNode(n: NodeRow) {
  return {
    instance_id: n.instance_id,
    kind: n.kind,
    active: n.active === 1,
    auth: n.token_hash
      ? 'token'
      : n.cert_fingerprint
        ? `cert sha256:${n.cert_fingerprint}`
        : `cert name:${n.cert_name}`,
    created_at: formatMillis(Number(n.created_ms)),
    last_seen_at: n.last_seen_ms === null ? null : formatMillis(Number(n.last_seen_ms)),
  }
}
