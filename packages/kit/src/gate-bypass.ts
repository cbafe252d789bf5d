/**
 * A gate's trusted-range bypass (sshproxy, tlsgate): clients whose source address lies in one of these ranges skip the
 * fingerprint verdict (rate limits, the connection cap and observation still apply). Static
 * ranges come from the configuration; managed ranges come from the control plane and are
 * kept in the `managed_ranges` table so a restart uses the last pulled list.
 */
import type { Kysely } from 'kysely'
import type { Logger } from './logger.ts'
import { CidrSet, parseCidr } from './net.ts'

/** The table both gates keep their managed ranges in (`managed_ranges`). */
export interface ManagedRangesDB {
  managed_ranges: { cidr: string; updated_at: string }
}
type DB = ManagedRangesDB

export class BypassRanges {
  readonly #static: CidrSet
  #managed: CidrSet
  #all: CidrSet

  constructor(staticRanges: readonly string[], managed: readonly string[] = []) {
    this.#static = new CidrSet(staticRanges)
    this.#managed = new CidrSet(managed)
    this.#all = new CidrSet([...this.#static.ranges, ...this.#managed.ranges])
  }

  /** Whether the (normalised) client address is in a static or a managed range. */
  has(ip: string): boolean {
    return this.#all.size > 0 && this.#all.has(ip)
  }

  get staticRanges(): string[] {
    return this.#static.ranges.map((r) => r.text)
  }

  get managedRanges(): string[] {
    return this.#managed.ranges.map((r) => r.text)
  }

  /** Swap the managed set in memory (after it was stored). */
  setManaged(cidrs: readonly string[]): void {
    this.#managed = new CidrSet(cidrs)
    this.#all = new CidrSet([...this.#static.ranges, ...this.#managed.ranges])
  }
}

/** Canonical CIDR texts of `cidrs`; entries that are not ranges are reported through `invalid`. */
export function canonicalRanges(cidrs: readonly string[], invalid: (text: string, reason: string) => void): string[] {
  const out = new Set<string>()
  for (const c of cidrs) {
    try {
      out.add(parseCidr(c, { loose: true }).text)
    } catch (err) {
      invalid(c, (err as Error).message)
    }
  }
  return [...out]
}

export async function loadManagedRanges(db: Kysely<DB>): Promise<string[]> {
  const rows = await db.selectFrom('managed_ranges').select('cidr').orderBy('cidr').execute()
  return rows.map((r) => r.cidr)
}

/** Replace every managed range in one transaction; returns the stored canonical list. */
export async function storeManagedRanges(db: Kysely<DB>, cidrs: readonly string[], now: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('managed_ranges').execute()
    for (let i = 0; i < cidrs.length; i += 500) {
      const chunk = cidrs.slice(i, i + 500)
      await trx
        .insertInto('managed_ranges')
        .values(chunk.map((cidr) => ({ cidr, updated_at: now })))
        .execute()
    }
  })
}

/**
 * `replaceManagedRanges` for the sync sink: canonicalise, store atomically, then swap the
 * in-memory set (static ranges stay). Unchanged lists are not rewritten.
 */
export async function replaceManagedRanges(
  db: Kysely<DB>,
  bypass: BypassRanges,
  cidrs: readonly string[],
  logger: Logger,
): Promise<void> {
  const list = canonicalRanges(cidrs, (text, reason) =>
    logger.warn({ range: text, reason }, 'control plane sent an invalid trusted range; ignored'),
  ).sort()
  const current = bypass.managedRanges.sort()
  if (list.length === current.length && list.every((c, i) => c === current[i])) return
  await storeManagedRanges(db, list, new Date().toISOString())
  bypass.setManaged(list)
  logger.info({ managed_ranges: list.length, ranges: list.slice(0, 32) }, 'trusted ranges from the control plane')
}
