/**
 * The provider zone allowlist: DNSCTL_PROVIDER_ZONES until the first committed revision, then
 * the newest committed revision (provider_allowlist table). Revisions are opaque and checked
 * like zone revisions (If-Match or expected_revision).
 */
import { createHash } from 'node:crypto'
import type { Kysely, Transaction } from 'kysely'
import type { DB, ProviderAllowlistRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export interface Allowlist {
  zones: string[]
  revision: string
  source: 'environment' | 'committed'
  committed_at: string | null
  actor: string | null
}

export function configRevision(zones: readonly string[]): string {
  return `env-${createHash('sha256').update(JSON.stringify(zones)).digest('base64url').slice(0, 16)}`
}

export async function currentAllowlist(db: Db, configured: readonly string[]): Promise<Allowlist> {
  const row = await db.selectFrom('provider_allowlist').selectAll().orderBy('seq', 'desc').limit(1).executeTakeFirst()
  if (!row) {
    const zones = [...configured].sort()
    return { zones, revision: configRevision(zones), source: 'environment', committed_at: null, actor: null }
  }
  return {
    zones: JSON.parse(row.zones) as string[],
    revision: row.revision,
    source: 'committed',
    committed_at: row.committed_at,
    actor: row.actor,
  }
}

export async function commitAllowlist(
  db: Kysely<DB>,
  entry: Omit<ProviderAllowlistRow, 'seq' | 'revision' | 'zones'> & { zones: string[] },
): Promise<string> {
  return db.transaction().execute(async (tx) => {
    const last = await tx
      .selectFrom('provider_allowlist')
      .select('seq')
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirst()
    const seq = Number(last?.seq ?? 0) + 1
    const revision = `a${seq}-${createHash('sha256')
      .update(`${seq}${JSON.stringify(entry.zones)}`)
      .digest('base64url')
      .slice(0, 12)}`
    await tx
      .insertInto('provider_allowlist')
      .values({ ...entry, seq, revision, zones: JSON.stringify(entry.zones) })
      .execute()
    return revision
  })
}

export function listAllowlistRevisions(db: Db, limit: number): Promise<ProviderAllowlistRow[]> {
  return db.selectFrom('provider_allowlist').selectAll().orderBy('seq', 'desc').limit(limit).execute()
}
