/**
 * The candidate report: interval rules, the matches correlated at ingest (web_evidence) grouped
 * by the database, shadow verdicts. Never writes.
 */
import type { DatabaseKind } from '@gatehouse/kit'
import { parseDuration } from '@gatehouse/kit/durations.ts'
import type { Kysely, Transaction } from 'kysely'
import type { DB } from '../db/schema.ts'
import { decisionsFor } from '../decisions/store.ts'
import { errors } from '../errors.ts'
import { parseMillis } from '../timestamps.ts'
import { type Candidate, candidatesOf, type ShadowPolicy, shadowVerdict } from './candidates.ts'
import { groupedEvidence } from './evidence.ts'

/** Longest report window (spec: at most 30m). */
export const MAX_WINDOW_MS = 30 * 60 * 1000
/** Most candidates in one report (most signals first); `truncated` says when more matched. */
export const MAX_CANDIDATES = 5000

export interface Interval {
  fromMs: number
  toMs: number
  windowMs: number
}

/**
 * The evidence interval from the query: `window` long (default `defaultWindowMs`, at most
 * 30m), starting at `since` when given (and ending no later than now), else ending now.
 */
export function reportInterval(
  query: { window?: string | undefined; since?: string | undefined },
  defaultWindowMs: number,
  nowMs: number,
): Interval {
  let windowMs = defaultWindowMs
  if (query.window !== undefined) {
    try {
      windowMs = parseDuration(query.window)
    } catch {
      throw errors.invalid_window(`window ${JSON.stringify(query.window.slice(0, 40))} is not a duration such as 15m`)
    }
    if (windowMs < 1000 || windowMs > MAX_WINDOW_MS) throw errors.invalid_window('window must be between 1s and 30m')
  }
  if (query.since === undefined) return { fromMs: nowMs - windowMs, toMs: nowMs, windowMs }
  const since = parseMillis(query.since)
  if (since === undefined) throw errors.invalid_timestamp('since')
  if (since > nowMs) throw errors.invalid_since()
  return { fromMs: since, toMs: Math.min(since + windowMs, nowMs), windowMs }
}

export interface Report {
  interval: Interval
  candidates: Candidate[]
  truncated: boolean
}

/** Correlate, group and (when the policy is enabled) score; read-only. */
export async function buildReport(
  db: Kysely<DB> | Transaction<DB>,
  kind: DatabaseKind,
  interval: Interval,
  policy: ShadowPolicy,
  nowMs: number,
  limit = MAX_CANDIDATES,
  withDecisions = true,
): Promise<Report> {
  const groups = candidatesOf(await groupedEvidence(db, kind, interval.fromMs, interval.toMs))
  const kept = groups.slice(0, limit)
  const decisions = withDecisions ? await decisionsFor(db, kept) : new Map()
  const candidates = kept.map((g): Candidate => {
    const decision = decisions.get(`${g.instance_id}/${g.fingerprint}`)
    const c: Candidate = { ...g, decision }
    if (policy.enabled) c.shadow = shadowVerdict(g.evidence, decision, policy, nowMs)
    return c
  })
  return { interval, candidates, truncated: groups.length > kept.length }
}
