/**
 * Search text: case-insensitive substring semantics. The query is split on whitespace;
 * every term must occur somewhere in the notification's search document (text,
 * attachment and card content, source, channel name). Double quotes keep a phrase
 * together: `"disk full" web-1`.
 *
 * Every term becomes an exact check of the lower-cased document (GLOB in SQLite, LIKE in
 * PostgreSQL). Index use:
 * - PostgreSQL: a pg_trgm GIN index answers the LIKE; the planner chooses with its statistics.
 * - SQLite: the FTS5 trigram index drives the query: the intersection of the rarest
 *   trigrams of every term (plus the channel filter's name, which is part of each document)
 *   is walked newest first, each candidate row is confirmed by the exact check and joined
 *   with the other filters, and the walk stops as soon as the page is full. Trigrams found
 *   in most notifications are left out (intersecting them is slow and narrows nothing);
 *   a trigram found nowhere means no indexed result. Counts come from TrigramStats.
 *   The index is filled in the background (inbox/indexer.ts); rows newer than its
 *   high-water mark are checked by the exact check alone (see queryInbox).
 * Terms shorter than three characters cannot use a trigram index and are checked by scan.
 */
import { type DatabaseKind, sql } from '@gatehouse/kit'
import type { RawBuilder } from 'kysely'
import type { TrigramStats } from './trigram-stats.ts'

export const MAX_TERMS = 8
export const MAX_QUERY_LENGTH = 200
/** Trigrams asked of the index per term: the rarest (the exact check covers the rest). */
const TRIGRAMS_PER_TERM = 6
/** Trigrams in more than this share of notifications narrow little and are slow to intersect. */
const COMMON_SHARE = 0.3

export function searchTerms(q: string): string[] {
  const terms: string[] = []
  for (const m of q.matchAll(/"([^"]*)"|(\S+)/g)) {
    const term = (m[1] ?? m[2] ?? '').toLowerCase().replace(/\s+/g, ' ').trim()
    if (term !== '' && !terms.includes(term)) terms.push(term)
  }
  return terms.slice(0, MAX_TERMS)
}

/** GLOB is case-sensitive with `*`, `?` and `[` special; escape them as one-character classes. */
function globPattern(term: string): string {
  return `*${term.replace(/[*?[]/g, (c) => `[${c}]`)}*`
}

/** LIKE with backslash as the escape character (PostgreSQL's default). */
function likePattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

export function trigrams(term: string): string[] {
  const chars = [...term]
  const out = new Set<string>()
  for (let i = 0; i + 3 <= chars.length; i++) out.add(chars.slice(i, i + 3).join(''))
  return [...out]
}

export interface SearchPlan {
  /** SQLite only: an FTS5 query over trigrams that every match contains (drives the query). */
  match?: string
  /** Exact substring checks, one per term. */
  exact: RawBuilder<boolean>[]
  /** PostgreSQL: collect the matching ids before paging (see queryInbox). */
  materialize?: boolean
  /** SQLite: no indexed notification can match (only rows not indexed yet may). */
  indexMiss?: boolean
}

/** The plan for the terms; undefined when nothing can match. */
export async function searchPlan(
  kind: DatabaseKind,
  stats: TrigramStats | undefined,
  terms: string[],
  channel: string | undefined,
  otherFilters = false,
): Promise<SearchPlan | undefined> {
  const exact = terms.map((t) =>
    kind === 'postgres'
      ? sql<boolean>`n.search_text like ${likePattern(t)}`
      : sql<boolean>`n.search_text glob ${globPattern(t)}`,
  )
  if (kind === 'postgres' || !stats) {
    const materialize =
      terms.some((t) => [...t].length >= 3) && (terms.length > 1 || channel !== undefined || otherFilters)
    return { exact, materialize }
  }
  const indexed = terms.filter((t) => [...t].length >= 3)
  if (indexed.length === 0) return { exact }
  const grams = [...new Set([...indexed, channel ?? ''].flatMap(trigrams))]
  const counts = await stats.counts(grams)
  // A trigram found nowhere in the index: no indexed row matches (rows newer than the
  // index's high-water mark are still scanned, see queryInbox).
  if (indexed.some((t) => trigrams(t).some((g) => counts.get(g) === 0))) return { exact, indexMiss: true }
  const common = (await stats.total()) * COMMON_SHARE
  const rarest = (text: string) =>
    trigrams(text)
      .filter((g) => (counts.get(g) ?? 0) > 0)
      .sort((a, b) => counts.get(a)! - counts.get(b)!)
      .filter((g, i) => i === 0 || counts.get(g)! <= common)
      .slice(0, TRIGRAMS_PER_TERM)
  const chosen = indexed.flatMap(rarest)
  // The channel name is part of every document, so its trigrams narrow the candidates too.
  if (channel !== undefined) chosen.push(...rarest(channel))
  const match = [...new Set(chosen)].map((g) => `"${g.replaceAll('"', '""')}"`).join(' AND ')
  return { match, exact }
}
