/**
 * Node pairings (the "same host" rule's second form), shared by the API, the dashboard and the
 * CLI: validated, audited, and applied to the ingest-time evidence in the same transaction.
 */
import type { DatabaseKind } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import { audit } from '../admins/store.ts'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { getNode } from '../nodes/store.ts'
import { formatMillis } from '../timestamps.ts'
import { lockCorrelation, recorrelatePair } from './evidence.ts'

export interface Pair {
  websignal_id: string
  tlsgate_id: string
  actor: string
  created_at: string
}

export async function listPairs(db: Kysely<DB>): Promise<Pair[]> {
  const rows = await db.selectFrom('web_node_pairs').selectAll().orderBy('websignal_id').orderBy('tlsgate_id').execute()
  return rows.map((r) => ({
    websignal_id: r.websignal_id,
    tlsgate_id: r.tlsgate_id,
    actor: r.actor,
    created_at: formatMillis(Number(r.created_ms)),
  }))
}

/**
 * Pair a web signal node (websignal or log_watcher) with a TLS gate; idempotent (false when the
 * pairing existed). 400 invalid_pair for any other kind of node or an unknown one.
 */
export async function addPair(
  db: Kysely<DB>,
  kind: DatabaseKind,
  websignalId: string,
  tlsgateId: string,
  actor: string,
): Promise<boolean> {
  const web = await getNode(db, websignalId)
  if (!web || (web.kind !== 'websignal' && web.kind !== 'log_watcher')) {
    throw errors.invalid_pair(`${websignalId} is not a registered websignal node`)
  }
  const gate = await getNode(db, tlsgateId)
  if (gate?.kind !== 'tlsgate') throw errors.invalid_pair(`${tlsgateId} is not a registered tlsgate node`)
  return db.transaction().execute(async (trx) => {
    const r = await trx
      .insertInto('web_node_pairs')
      .values({ websignal_id: websignalId, tlsgate_id: tlsgateId, actor, created_ms: Date.now() })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst()
    const added = Number(r.numInsertedOrUpdatedRows ?? 0) > 0
    if (added) {
      await lockCorrelation(trx, kind)
      await recorrelatePair(trx, websignalId, tlsgateId)
    }
    await audit(trx, actor, 'web_pair.add', `${websignalId}/${tlsgateId}`)
    return added
  })
}

/** Remove a pairing; 404 pair_not_found when there is none. */
export async function removePair(
  db: Kysely<DB>,
  kind: DatabaseKind,
  websignalId: string,
  tlsgateId: string,
  actor: string,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const r = await trx
      .deleteFrom('web_node_pairs')
      .where('websignal_id', '=', websignalId)
      .where('tlsgate_id', '=', tlsgateId)
      .executeTakeFirst()
    if (Number(r.numDeletedRows) === 0) throw errors.pair_not_found()
    await lockCorrelation(trx, kind)
    await recorrelatePair(trx, websignalId, tlsgateId)
    await audit(trx, actor, 'web_pair.remove', `${websignalId}/${tlsgateId}`)
  })
}
