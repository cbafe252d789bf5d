/**
 * GET /v1/policy: a gate's decisions changed after `since`, and the cursor to send next; with
 * `resync` when the gate must pull everything again (its cursor is past this database's
 * decisions, or before deleted decisions that retention removed).
 */
import { type HttpApp, hashToken, PolicyResponse } from '@gatehouse/kit'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { nodeOf } from '../auth/guards.ts'
import { isCertificateNode, presentedCertificate } from '../auth/principal.ts'
import { bearerFrom } from '../auth/tokens.ts'
import type { AppContext } from '../context.ts'
import type { DecisionRow } from '../db/schema.ts'
import { toDecision } from '../decisions/service.ts'
import {
  decisionsSince,
  MIN_TOMBSTONE_AGE_US,
  nodeWithDecisionsSince,
  type PullCredential,
  readDecisionClock,
  readPurgedThrough,
} from '../decisions/store.ts'
import { errors } from '../errors.ts'
import { claimNodeAlert } from '../nodes/store.ts'
import { formatMicros, parseMicros } from '../timestamps.ts'

const GATE_KINDS = ['sshgate', 'tlsgate'] as const

/** An incremental pull read with its node (nodeWithDecisionsSince), for the handler. */
interface Prefetched {
  sinceUs: number
  clockUs: number
  rows: DecisionRow[]
}

export function policyRoutes(app: HttpApp, ctx: AppContext) {
  const pulls = ctx.metrics.counter('policy_pulls_total', 'Policy responses served', ['kind'])
  const cursorAhead = cursorAheadCheck(ctx)
  const requireGate = ctx.guards.requireNode(GATE_KINDS)
  const prefetched = new WeakMap<FastifyRequest, Prefetched>()

  /**
   * PostgreSQL, an incremental pull whose cursor needs no clock read first (nearly every pull),
   * with a bearer token or, with no other credential, a verified client certificate: the node and
   * its decisions in one round trip (nodeWithDecisionsSince), the node then admitted by the same
   * checks as requireNode. Anything else (no credential or cursor, a token no node has, a
   * certificate that is not the asked instance's, SQLite, whose reads do not cross a socket) goes
   * through requireNode as before, which answers it as it always has.
   */
  const guard =
    ctx.database.kind !== 'postgres'
      ? requireGate
      : async (req: FastifyRequest, reply: FastifyReply) => {
          const query = req.query as Record<string, unknown>
          const sinceUs = typeof query.since === 'string' ? parseMicros(query.since) : undefined
          if (sinceUs === undefined || !cursorAhead.fresh(sinceUs)) return requireGate(req, reply)
          const bearer = bearerFrom(req.headers.authorization)
          const cert =
            req.headers.authorization === undefined && req.headers.cookie === undefined
              ? presentedCertificate(req)
              : undefined
          let credential: PullCredential
          if (typeof bearer === 'string') credential = { tokenHash: hashToken(bearer) }
          else if (cert && typeof query.instance_id === 'string')
            credential = { instanceId: query.instance_id, certFingerprint: cert.fingerprint, certNames: cert.names }
          else return requireGate(req, reply)
          // Read before the decisions: every decision up to it is committed (decisions/store.ts).
          const clockUs = cursorAhead.newestUs
          const found = await nodeWithDecisionsSince(
            ctx.database.db,
            credential,
            sinceUs,
            ctx.settings.policyPageSize + 1,
          )
          if (!found) return requireGate(req, reply)
          if (cert && found.claims) {
            if (!isCertificateNode(found.node, cert, found.claims)) return requireGate(req, reply)
            const principal = {
              type: 'node',
              node: found.node,
              via: 'certificate',
              certExpiresMs: cert.expiresMs,
            } as const
            ctx.guards.admitNode(req, principal, GATE_KINDS)
          } else ctx.guards.admitNode(req, { type: 'node', node: found.node, via: 'token' }, GATE_KINDS)
          prefetched.set(req, { sinceUs, clockUs, rows: found.rows })
        }
  const purged = ctx.metrics.counter(
    'policy_cursor_purged_total',
    'Policy pulls from before deleted decisions that retention removed (the gate is told to resync)',
  )
  app.get(
    '/v1/policy',
    {
      onRequest: guard,
      schema: {
        summary: 'Pull the decisions changed since a cursor (gate policy)',
        querystring: Type.Object(
          { instance_id: Type.String(), since: Type.Optional(Type.String()) },
          { additionalProperties: false },
        ),
        response: { 200: PolicyResponse },
      },
    },
    async (req) => {
      const node = nodeOf(req)
      const limit = ctx.settings.policyPageSize
      let { sinceUs, clockUs, rows } = prefetched.get(req) ?? { sinceUs: 0, clockUs: 0, rows: undefined }
      if (rows === undefined) {
        if (req.query.since !== undefined) {
          const parsed = parseMicros(req.query.since)
          if (parsed === undefined) throw errors.invalid_timestamp('since')
          sinceUs = parsed
        }
        if (!cursorAhead.fresh(sinceUs)) await cursorAhead.refresh()
        // Read before the decisions: every decision up to it is committed (decisions/store.ts).
        clockUs = cursorAhead.newestUs
        rows = await decisionsSince(ctx.database.db, node.instance_id, sinceUs, limit + 1)
      }
      let resync: PolicyResponse['resync_reason'] = cursorAhead.behind(sinceUs) ? 'behind' : undefined
      if (resync) cursorAhead.report(node.instance_id, sinceUs)
      // After the decisions: a tombstone this read missed because retention removed it has moved the mark.
      if (!resync && (await missedPurge(ctx, sinceUs, clockUs))) {
        resync = 'purged'
        purged.inc()
        req.log.info(
          { instance_id: node.instance_id, cursor: formatMicros(sinceUs) },
          'a gate pulled from before deleted decisions that retention removed: it is told to pull its whole policy again',
        )
      }
      const more = rows.length > limit
      const page = more ? rows.slice(0, limit) : rows
      const lastUs = page.length > 0 ? Number(page.at(-1)!.updated_us) : sinceUs
      pulls.inc({ kind: req.query.since === undefined ? 'full' : 'incremental' })
      const body: PolicyResponse = {
        // A last page moves the cursor up to the clock: a gate whose own decisions are old keeps
        // a recent cursor (below the purge mark, an old one would mean a resync: missedPurge).
        cursor: formatMicros(more || resync ? lastUs : Math.max(lastUs, clockUs)),
        decisions: page.map(toDecision),
        more,
      }
      if (ctx.trusted) body.trusted_ranges = ctx.trusted.current()
      // The gate pulls everything again and drops what this database no longer has (kit gate-sync).
      if (resync) {
        body.resync = true
        body.resync_reason = resync
      }
      return body
    },
  )
}

/** An hour: clocks of the processes sharing the database may differ by that much. */
const CLOCK_SLACK_US = 3_600_000_000

/**
 * Whether a pull from `sinceUs` may have missed a tombstone that retention removed
 * (`--deleted-decision-retention`): the cursor is before the purge mark. Only cursors that are
 * both behind the decision clock (read before the decisions; the mark is a removed tombstone's
 * time, so at most the clock a minute ago) and older than the youngest tombstone retention may
 * remove pay the read of the mark: a gate that pulls regularly never does.
 */
async function missedPurge(ctx: AppContext, sinceUs: number, clockUs: number): Promise<boolean> {
  if (sinceUs <= 0 || sinceUs >= clockUs) return false
  if (sinceUs >= Date.now() * 1000 - MIN_TOMBSTONE_AGE_US + CLOCK_SLACK_US) return false
  return sinceUs < (await readPurgedThrough(ctx.database.db))
}

/**
 * A gate's cursor past every decision time this database has issued: the database was restored
 * from a backup, or failed over to a replica that had not caught up. Decisions made after that
 * point reached the gate but are not here, and nothing would say so: the gate would keep
 * enforcing them while the dashboard shows none. So the answer carries `resync`: the gate pulls
 * the whole policy again and drops the verdicts it had pulled that this database no longer has
 * (kit gate-sync.ts). New decisions reach the gate either way (their times come from the wall
 * clock, past its cursor).
 *
 * In a healthy database every cursor is at or below the decision clock (a cursor is a decision's
 * time, and the clock only moves forward). The first decision after a restore moves the clock
 * past the cursors again, though, so the clock alone would stop telling within seconds on a busy
 * control plane. So each reading is remembered too: a cursor later than the clock as read at
 * time R, but earlier than R, was issued by no database this process has seen (a decision
 * committed after R is timed after R; a minute's margin covers a transaction slow to commit and
 * clocks a little apart). A reading lower than the one before (a failover under a running
 * process) adds such a gap. The newest time is cached, read again when a cursor passes it and
 * at most once a minute otherwise, so a pull costs no extra query.
 */
function cursorAheadCheck(ctx: AppContext) {
  const ahead = ctx.metrics.counter(
    'policy_cursor_ahead_total',
    'Policy pulls whose cursor is past every decision in the database (restored or failed over to an older copy)',
  )
  const MARGIN_US = 60_000_000
  const warned = new Map<string, number>()
  /** Cursor ranges (exclusive) that no database seen by this process issued, newest last. */
  const gaps: Array<{ fromUs: number; toUs: number }> = []
  let read = false
  const state = {
    /** The newest decision time read from the database; a cursor at or below it needs no check. */
    newestUs: 0,
    /** Read again after a minute anyway: a failover to an older copy lowers it under a running process. */
    staleAt: 0,
    async refresh(): Promise<void> {
      const newest = await readDecisionClock(ctx.database.db)
      const toUs = Date.now() * 1000 - MARGIN_US
      if ((!read || newest < state.newestUs) && toUs > newest) {
        gaps.push({ fromUs: newest, toUs })
        if (gaps.length > 8) gaps.shift()
      }
      read = true
      state.newestUs = newest
      state.staleAt = Date.now() + 60_000
    },
    /** Whether a pull from `sinceUs` may use the newest time as read (else `refresh` first). */
    fresh(sinceUs: number): boolean {
      return sinceUs <= state.newestUs && Date.now() <= state.staleAt
    },
    behind(sinceUs: number): boolean {
      if (sinceUs > state.newestUs) return true
      for (const g of gaps) if (sinceUs > g.fromUs && sinceUs < g.toUs) return true
      return false
    },
    report(instanceId: string, sinceUs: number): void {
      ahead.inc()
      const now = Date.now()
      if (now - (warned.get(instanceId) ?? 0) < 10 * 60_000) return
      if (warned.size >= 10_000) warned.clear()
      warned.set(instanceId, now)
      const gap = gaps.find((g) => sinceUs > g.fromUs && sinceUs < g.toUs)
      const newest = gap && sinceUs <= state.newestUs ? gap.fromUs : state.newestUs
      const message = `node ${instanceId} has decisions up to ${formatMicros(sinceUs)}, later than any in this database (${formatMicros(newest)}): the database was restored from a backup or failed over to a copy that had not caught up. The gate is told to pull every decision again and drop those this database no longer has (a Gatehouse gate does; another may not): make again the decisions lost with the copy, and compare the gate's list with edgegate decision list --instance ${instanceId}`
      ctx.logger.warn(
        { instance_id: instanceId, cursor: formatMicros(sinceUs), newest_decision: formatMicros(newest) },
        message,
      )
      // Once per node for all the processes sharing the database, as the node health alerts. A
      // claim that cannot be written (a read-only copy) alerts anyway: twice beats never.
      claimNodeAlert(ctx.database.db, instanceId, 'database-behind', now, 10 * 60_000)
        .catch(() => true)
        .then((claimed) => {
          if (!claimed) return
          ctx.alert({
            title: `the database is behind node ${instanceId}`,
            message,
            priority: 'high',
            tags: ['database-behind'],
            group: { key: 'database-behind', subject: instanceId, plural: 'nodes are ahead of this database' },
          })
        })
    },
  }
  return state
}
