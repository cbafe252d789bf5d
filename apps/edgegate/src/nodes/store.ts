/** SQL for the node registry. */
import { type Kysely, sql, type Transaction } from 'kysely'
import type { DB, NodeKind, NodeRow, NodeTable } from '../db/schema.ts'

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
