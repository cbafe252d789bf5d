/** SQL for the node registry. */
import { type Kysely, sql, type Transaction } from 'kysely'
import type { AlertSubject, DB, NodeKind, NodeRow, NodeTable } from '../db/schema.ts'
import { SCOPE_INSTANCE } from '../decisions/store.ts'

type Db = Kysely<DB> | Transaction<DB>

export function getNode(db: Db, instanceId: string): Promise<NodeRow | undefined> {
  return db.selectFrom('nodes').selectAll().where('instance_id', '=', instanceId).executeTakeFirst()
}

/**
 * The node holding a token (every gate request asks: one indexed lookup, not cached, so a
 * disabled node or rotated token takes effect at once in every process). Written as SQL
 * rather than built through the query builder, which cost more than the lookup itself.
 */
export async function findByTokenHash(db: Db, hash: string): Promise<NodeRow | undefined> {
  const { rows } = await sql<NodeRow>`select * from "nodes" where "token_hash" = ${hash}`.execute(db)
  return rows[0]
}

export function findByCertFingerprint(db: Db, fingerprint: string): Promise<NodeRow | undefined> {
  return db.selectFrom('nodes').selectAll().where('cert_fingerprint', '=', fingerprint).executeTakeFirst()
}

export function findByCertNames(db: Db, names: string[]): Promise<NodeRow[]> {
  if (names.length === 0) return Promise.resolve([])
  return db.selectFrom('nodes').selectAll().where('cert_name', 'in', names).limit(2).execute()
}

export function listNodes(db: Db, kinds?: NodeKind[]): Promise<NodeRow[]> {
  let q = db.selectFrom('nodes').selectAll().orderBy('instance_id')
  if (kinds) q = q.where('kind', 'in', kinds)
  return q.execute()
}

export async function insertNode(db: Db, row: NodeTable): Promise<void> {
  await db.insertInto('nodes').values(row).execute()
}

export async function updateNode(
  db: Db,
  instanceId: string,
  set: Partial<Pick<NodeTable, 'active' | 'token_hash' | 'updated_ms' | 'last_seen_ms' | 'cert_expires_ms'>>,
): Promise<boolean> {
  const r = await db.updateTable('nodes').set(set).where('instance_id', '=', instanceId).executeTakeFirst()
  return Number(r.numUpdatedRows) > 0
}

/**
 * Claim the announcement of `what` about a node: true in exactly one of the processes sharing
 * the database. `silent` is claimed once until released (the node heard from again);
 * `certificate` and `database-behind` again once `againAfterMs` has passed since the last claim
 * (administrator tokens use the same table, `admins/store.ts`).
 */
export async function claimNodeAlert(
  db: Db,
  instanceId: string,
  what: AlertSubject,
  now: number,
  againAfterMs?: number,
): Promise<boolean> {
  const insert = db.insertInto('node_alerts').values({ instance_id: instanceId, what, at_ms: now })
  const result = await insert
    .onConflict((oc) => {
      const conflict = oc.columns(['instance_id', 'what'])
      return againAfterMs === undefined
        ? conflict.doNothing()
        : conflict.doUpdateSet({ at_ms: now }).where('node_alerts.at_ms', '<=', now - againAfterMs)
    })
    .executeTakeFirst()
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0
}

/** Release a `silent` claim; true in the one process whose release removed it. */
export async function releaseNodeAlert(db: Db, instanceId: string, what: 'silent'): Promise<boolean> {
  const result = await db
    .deleteFrom('node_alerts')
    .where('instance_id', '=', instanceId)
    .where('what', '=', what)
    .executeTakeFirst()
  return result.numDeletedRows > 0n
}

/** Nodes announced as silent and not yet heard from again. */
export async function claimedSilent(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('node_alerts').select('instance_id').where('what', '=', 'silent').execute()
  return rows.map((r) => r.instance_id)
}

/** What is stored under a node's instance id: what `node remove --purge` removes with it. */
export interface NodeData {
  fingerprints: number
  /** Live decisions scoped to the node (tombstones are not counted). */
  decisions: number
  signals: number
  smtp_reports: number
  web_sightings: number
}

export async function countNodeData(db: Db, instanceId: string): Promise<NodeData> {
  const count = async (table: 'fingerprints' | 'signals' | 'smtp_reports' | 'web_sightings') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .where('instance_id', '=', instanceId)
          .executeTakeFirstOrThrow()
      ).n,
    )
  const decisions = await db
    .selectFrom('decisions')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('scope_type', '=', SCOPE_INSTANCE)
    .where('scope_id', '=', instanceId)
    .where('deleted', '=', 0)
    .executeTakeFirstOrThrow()
  return {
    fingerprints: await count('fingerprints'),
    decisions: Number(decisions.n),
    signals: await count('signals'),
    smtp_reports: await count('smtp_reports'),
    web_sightings: await count('web_sightings'),
  }
}

/**
 * Delete the node's row and everything stored under its instance id but its decisions (which
 * the caller turns into tombstones first) and the audit log. Inside the caller's transaction.
 */
export async function deleteNodeAndData(trx: Transaction<DB>, instanceId: string): Promise<void> {
  for (const table of [
    'fingerprints',
    'web_sightings',
    'signals',
    'signal_publishers',
    'smtp_reports',
    'node_alerts',
  ] as const) {
    await trx.deleteFrom(table).where('instance_id', '=', instanceId).execute()
  }
  await trx
    .deleteFrom('web_evidence')
    .where((eb) => eb.or([eb('gate', '=', instanceId), eb('node', '=', instanceId)]))
    .execute()
  await trx.deleteFrom('web_evidence_groups').where('gate', '=', instanceId).execute()
  await trx
    .deleteFrom('web_node_pairs')
    .where((eb) => eb.or([eb('websignal_id', '=', instanceId), eb('tlsgate_id', '=', instanceId)]))
    .execute()
  await trx.deleteFrom('nodes').where('instance_id', '=', instanceId).execute()
}
