/** Node registry rules: kinds, exactly one credential per node, enable/disable, token rotation, removal. */
import type { DatabaseKind } from '@gatehouse/kit/db/database.ts'
import { INSTANCE_ID_PATTERN } from '@gatehouse/kit/edge-limits.ts'
import type { Kysely } from 'kysely'
import { audit } from '../admins/store.ts'
import { newToken } from '../auth/tokens.ts'
import type { DB, NodeKind } from '../db/schema.ts'
import { tickClock, tombstoneScope } from '../decisions/store.ts'
import { type Credential, RegistryError } from './registry.ts'
import { countNodeData, deleteNodeAndData, getNode, insertNode, type NodeData, updateNode } from './store.ts'

export { type Credential, describeNode, RegistryError } from './registry.ts'

export const NODE_KINDS: readonly NodeKind[] = ['sshgate', 'tlsgate', 'websignal', 'log_watcher']

/** Register a node; returns the bearer token (shown once) for token nodes. */
export async function addNode(
  db: Kysely<DB>,
  instanceId: string,
  kind: string,
  credential: Credential,
  actor: string,
): Promise<string | undefined> {
  if (!new RegExp(INSTANCE_ID_PATTERN).test(instanceId)) {
    throw new RegistryError(
      `instance id ${JSON.stringify(instanceId)} must be letters, digits, ".", "_" or "-" (at most 128)`,
      true,
    )
  }
  if (!NODE_KINDS.includes(kind as NodeKind))
    throw new RegistryError(`kind must be one of ${NODE_KINDS.join(', ')}`, true)
  if (credential.type === 'cert_fingerprint' && !/^[0-9a-f]{64}$/.test(credential.sha256)) {
    throw new RegistryError(
      'a certificate fingerprint is 64 lowercase hex characters (SHA-256 of the DER certificate)',
      true,
    )
  }
  if (credential.type === 'cert_name' && !/^[A-Za-z0-9*._-]{1,253}$/.test(credential.name)) {
    throw new RegistryError('a certificate name is a subject CN or DNS name', true)
  }
  const existing = await getNode(db, instanceId)
  if (existing) {
    // Its kind is the first thing to check: a node added with the wrong one gets 403 wrong_node_kind.
    throw new RegistryError(
      `node ${instanceId} already exists (kind ${existing.kind}${existing.kind === kind ? '' : `, not ${kind}`}); see edgegate node show ${instanceId}`,
    )
  }
  const now = Date.now()
  const token = credential.type === 'token' ? newToken('node') : undefined
  await db.transaction().execute(async (trx) => {
    await insertNode(trx, {
      instance_id: instanceId,
      kind: kind as NodeKind,
      active: 1,
      token_hash: token?.hash ?? null,
      cert_name: credential.type === 'cert_name' ? credential.name : null,
      cert_fingerprint: credential.type === 'cert_fingerprint' ? credential.sha256 : null,
      created_ms: now,
      updated_ms: now,
      last_seen_ms: null,
      cert_expires_ms: null,
    })
    await audit(trx, actor, 'node.add', instanceId)
  })
  return token?.token
}

export async function setNodeActive(db: Kysely<DB>, instanceId: string, active: boolean, actor: string) {
  if (!(await updateNode(db, instanceId, { active: active ? 1 : 0, updated_ms: Date.now() }))) {
    throw new RegistryError(`no node ${instanceId}`)
  }
  await audit(db, actor, active ? 'node.enable' : 'node.disable', instanceId)
}

/**
 * Replace a token node's token; the old one stops working at once. With `kind`, a node of
 * another kind is refused before anything changes: its new token would only get 403
 * wrong_node_kind from the endpoints a gate of that kind uses.
 */
export async function rotateNodeToken(
  db: Kysely<DB>,
  instanceId: string,
  actor: string,
  kind?: string,
): Promise<{ token: string; kind: NodeKind }> {
  if (kind !== undefined && !NODE_KINDS.includes(kind as NodeKind))
    throw new RegistryError(`kind must be one of ${NODE_KINDS.join(', ')}`, true)
  const node = await getNode(db, instanceId)
  if (!node) throw new RegistryError(`no node ${instanceId}`)
  if (kind !== undefined && node.kind !== kind) {
    throw new RegistryError(
      `node ${instanceId} is registered as kind ${node.kind}, not ${kind}: its token was not rotated (a node's kind cannot change: remove it with edgegate node remove and add it again with --kind ${kind}, or register the gate under another instance id)`,
    )
  }
  if (!node.token_hash)
    throw new RegistryError(`node ${instanceId} authenticates with a client certificate, not a token`)
  const token = newToken('node')
  await updateNode(db, instanceId, { token_hash: token.hash, updated_ms: Date.now() })
  await audit(db, actor, 'node.rotate_token', instanceId)
  return { token: token.token, kind: node.kind }
}

/** "120 fingerprints, 3 decisions": the non-zero counts, or '' for none. */
export function describeNodeData(data: NodeData): string {
  const names: [keyof NodeData, string][] = [
    ['fingerprints', 'fingerprint'],
    ['decisions', 'decision'],
    ['signals', 'signal'],
    ['smtp_reports', 'SMTP report'],
    ['web_sightings', 'web sighting'],
  ]
  return names
    .filter(([key]) => data[key] > 0)
    .map(([key, name]) => `${data[key]} ${name}${data[key] === 1 ? '' : 's'}`)
    .join(', ')
}

/**
 * Remove a node from the registry: its credential stops working at once. A node that has been
 * seen must be disabled first (`setNodeActive`), so no request of its gate is half-way through a
 * write when its data goes; one never seen (a mistyped id, the wrong kind) is removed at once.
 * What is stored under its id is removed only with `purge`, else the removal is refused naming
 * it: fingerprints, signals and reports without their node would be listed by no one. Its live
 * decisions become tombstones (not deleted), so a gate that comes back under the same id, once
 * added again, pulls them as pending and drops the old verdicts. The audit log keeps everything.
 */
export async function removeNode(
  db: Kysely<DB>,
  kind: DatabaseKind,
  instanceId: string,
  actor: string,
  purge: boolean,
): Promise<{ kind: NodeKind; removed: NodeData }> {
  return db.transaction().execute(async (trx) => {
    const node = await getNode(trx, instanceId)
    if (!node) throw new RegistryError(`no node ${instanceId} (edgegate node list shows them all)`)
    if (node.active === 1 && node.last_seen_ms !== null) {
      throw new RegistryError(
        `node ${instanceId} is active: disable it first (edgegate node disable ${instanceId}), so its gate stops syncing, then remove it`,
      )
    }
    const data = await countNodeData(trx, instanceId)
    const held = describeNodeData(data)
    if (held !== '' && !purge) {
      throw new RegistryError(
        `node ${instanceId} still has ${held}: remove them with it (edgegate node remove --purge ${instanceId}), or keep the node disabled`,
      )
    }
    // Clock first, like every decision write: the same lock order, a time of its own each.
    if (data.decisions > 0) await tombstoneScope(trx, instanceId, await tickClock(trx, kind, data.decisions), actor)
    await deleteNodeAndData(trx, instanceId)
    await audit(trx, actor, purge && held !== '' ? 'node.remove_purge' : 'node.remove', instanceId)
    return { kind: node.kind, removed: data }
  })
}
