/**
 * How many notifications contain a trigram (SQLite search). FTS5 intersects posting lists
 * slowly when some of them cover most of the table (a trigram of a word every notification
 * has), so the search plan leaves such trigrams out and keeps the rare ones. fts5vocab
 * counts a trigram by reading its whole posting list, which is cheap for rare trigrams and
 * costs tens of milliseconds for the commonest; positive counts are therefore cached per
 * process for a few minutes (frequencies drift slowly; a stale count only makes a plan
 * slower, never wrong, because every candidate is checked exactly).
 */
import { sql } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'

const TTL_MS = 5 * 60_000
const MAX_ENTRIES = 50_000

export class TrigramStats {
  readonly #db: Kysely<DB>
  readonly #cache = new Map<string, { count: number; at: number }>()
  #total: { count: number; at: number } | undefined

  constructor(db: Kysely<DB>) {
    this.#db = db
  }

  /** Notifications containing each trigram (0 when none). */
  async counts(grams: string[]): Promise<Map<string, number>> {
    const now = Date.now()
    const out = new Map<string, number>()
    for (const g of grams) {
      const hit = this.#cache.get(g)
      if (hit && now - hit.at < TTL_MS) {
        out.set(g, hit.count)
        continue
      }
      const row = await sql<{ doc: number }>`select doc from notification_fts_vocab where term = ${g}`.execute(this.#db)
      const count = Number(row.rows[0]?.doc ?? 0)
      // A zero is never cached: the next notification may contain the trigram, and a
      // stale zero would hide it. (Looking up an absent trigram is cheap.)
      if (count > 0) {
        if (this.#cache.size >= MAX_ENTRIES) this.#cache.delete(this.#cache.keys().next().value!)
        this.#cache.set(g, { count, at: now })
      }
      out.set(g, count)
    }
    return out
  }

  /** Roughly how many notifications exist (the newest id). */
  async total(): Promise<number> {
    const now = Date.now()
    if (this.#total && now - this.#total.at < 10_000) return this.#total.count
    const row = await sql<{ n: number | null }>`select max(id) as n from notifications`.execute(this.#db)
    this.#total = { count: Number(row.rows[0]?.n ?? 0), at: now }
    return this.#total.count
  }
}
