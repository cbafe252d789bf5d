/**
 * Push delivery: after notifications are stored, each one goes to the push subscriptions of
 * the readers who may see its channel (channels/access.ts's rule: administrators all, others
 * public channels and their private ones) and whose per-channel choice lets it through.
 *
 * Cluster-wide once: `push_cursor` holds the last notification id handed to delivery. A pass
 * reads the ids after it and claims them with a compare-and-set on that row; the process
 * whose update matched pushes them, any other reads on. A process that stops after claiming
 * loses those pushes: push is a best-effort wake-up (the inbox and the stream have every
 * item), so at-most-once is the right side to fail on.
 *
 * A pass runs when this process stored something (`wake()`), when PostgreSQL reports a
 * commit by any process (its LISTEN session, server.ts), and on a slow poll. Each browser's
 * pushes are budgeted (budget.ts): past the budget they are held and a summary push follows
 * when it allows, which every pass checks.
 */
import type { AppMetrics, Logger } from '@gatehouse/kit'
import { RepeatedFailure } from '@gatehouse/kit/repeated-failure.ts'
import type { Kysely } from 'kysely'
import type { DB, PushMode, PushSubscriptionRow } from '../db/schema.ts'
import { PushBudgets } from './budget.ts'
import { modeAllows, type PushSource, pushPayload, summaryPayload, urgencyOf } from './payload.ts'
import type { PushSender } from './sender.ts'
import { deleteSubscription, recordFailure, recordSuccess } from './store.ts'

const PAGE = 200
/** Shortest time between two delivery passes (ms). */
const MIN_GAP_MS = 50
/** Pushes in flight at once from one process. */
const CONCURRENCY = 16

interface Recipient {
  sub: PushSubscriptionRow
  isAdmin: boolean
  members: Set<string>
  prefs: Map<string, PushMode>
}

export interface PushDispatcherOptions {
  pollMs?: number
  /** Pushes a browser gets at once (0: no limit), then one per `intervalMs`. */
  budget?: { burst: number; intervalMs: number }
}

export class PushDispatcher {
  readonly #db: Kysely<DB>
  readonly #sender: PushSender
  readonly #logger: Logger
  /** A pass failing every two seconds (the database down or read-only) is logged once a minute. */
  readonly #passFailures: RepeatedFailure
  readonly #pollMs: number
  readonly #deliveries
  readonly #held
  readonly #budgets: PushBudgets
  #queue: Promise<unknown> = Promise.resolve()
  #passQueued = false
  #lastPass = 0
  #timer: NodeJS.Timeout | undefined
  #closed = false

  constructor(
    db: Kysely<DB>,
    sender: PushSender,
    logger: Logger,
    metrics: AppMetrics,
    options: PushDispatcherOptions = {},
  ) {
    this.#db = db
    this.#sender = sender
    this.#logger = logger
    this.#passFailures = new RepeatedFailure(logger, {
      failed: 'push delivery pass failed',
      recovered: 'push delivery passes work again',
    })
    this.#pollMs = options.pollMs ?? 2000
    this.#deliveries = metrics.counter('push_deliveries_total', 'Web Push messages by result', ['result'])
    this.#held = metrics.counter('push_held_total', "Pushes held past a browser's budget, to be told in a summary push")
    this.#budgets = new PushBudgets(options.budget?.burst ?? 0, options.budget?.intervalMs ?? 1000)
  }

  start(): void {
    this.#timer = setInterval(() => this.wake(), this.#pollMs).unref()
    this.wake()
  }

  /** Something was committed: run a pass soon (calls while one is queued coalesce). */
  wake(): void {
    if (this.#passQueued || this.#closed) return
    this.#passQueued = true
    // Wake-ups come with every stored batch; one pass per MIN_GAP_MS serves them all (a
    // push is not worth a database round trip per delivery while ingest is busy).
    const wait = this.#lastPass + MIN_GAP_MS - performance.now()
    setTimeout(
      () => {
        if (this.#closed) return
        this.#queue = this.#queue
          .then(async () => {
            this.#passQueued = false
            this.#lastPass = performance.now()
            await this.#pass()
            await this.#sendSummaries()
            this.#passFailures.succeeded()
          })
          .catch((err: unknown) => this.#passFailures.failed(err))
      },
      Math.max(0, wait),
    )
  }

  async close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#timer)
    await this.#queue
    await this.#sender.close()
  }

  async #pass(): Promise<void> {
    for (;;) {
      const cursor = await this.#db
        .selectFrom('push_cursor')
        .select('high_water')
        .where('id', '=', 1)
        .executeTakeFirst()
      if (!cursor) return
      const from = Number(cursor.high_water)
      // Nobody to push to: move past what exists, so a later subscriber gets no backlog. The
      // newest id is read before looking for subscriptions: everything up to it was stored
      // before any subscription this pass does not see (read the other way round, a
      // subscription and notifications arriving in between would lose those pushes).
      const max = await this.#db
        .selectFrom('notifications')
        .select((eb) => eb.fn.max('id').as('id'))
        .executeTakeFirst()
      const anySub = await this.#db.selectFrom('push_subscriptions').select('id').limit(1).executeTakeFirst()
      if (!anySub) {
        const to = Number(max?.id ?? 0)
        if (to > from) await this.#claim(from, to)
        return
      }
      const rows: PushSource[] = await this.#db
        .selectFrom('notifications')
        .select(['id', 'channel', 'kind', 'title', 'body', 'source', 'severity', 'content', 'created_at'])
        .where('id', '>', from)
        .orderBy('id')
        .limit(PAGE)
        .execute()
      const last = rows.at(-1)
      if (!last) return
      // Another process claimed these first: read on from where it left the cursor.
      if (!(await this.#claim(from, Number(last.id)))) continue
      await this.#deliver(rows, await this.#recipients())
      if (rows.length < PAGE) return
    }
  }

  async #claim(from: number, to: number): Promise<boolean> {
    const r = await this.#db
      .updateTable('push_cursor')
      .set({ high_water: to })
      .where('id', '=', 1)
      .where('high_water', '=', from)
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  /** Every subscription of an enabled reader, with what that reader may see and wants. */
  async #recipients(): Promise<Recipient[]> {
    const subs = await this.#db
      .selectFrom('push_subscriptions')
      .innerJoin('users', 'users.id', 'push_subscriptions.user_id')
      .selectAll('push_subscriptions')
      .select('users.is_admin')
      .where('users.enabled', '=', 1)
      .execute()
    if (subs.length === 0) return []
    const userIds = [...new Set(subs.map((s) => s.user_id))]
    const members = await this.#db
      .selectFrom('channel_members')
      .select(['user_id', 'channel'])
      .where('user_id', 'in', userIds)
      .execute()
    const prefs = await this.#db
      .selectFrom('push_preferences')
      .select(['user_id', 'channel', 'mode'])
      .where('user_id', 'in', userIds)
      .execute()
    return subs.map(({ is_admin, ...sub }) => ({
      sub,
      isAdmin: is_admin === 1,
      members: new Set(members.filter((m) => m.user_id === sub.user_id).map((m) => m.channel)),
      prefs: new Map(prefs.filter((p) => p.user_id === sub.user_id).map((p) => [p.channel, p.mode])),
    }))
  }

  async #deliver(rows: PushSource[], recipients: Recipient[]): Promise<void> {
    if (recipients.length === 0) return
    const channels = await this.#db.selectFrom('channels').select(['name', 'visibility']).execute()
    const isPublic = new Set(channels.filter((c) => c.visibility === 'public').map((c) => c.name))
    const batch = this.#batch()
    for (const row of rows) {
      let payload: string | undefined
      for (const r of recipients) {
        const sees = r.isAdmin || isPublic.has(row.channel) || r.members.has(row.channel)
        if (!sees || !modeAllows(r.prefs.get(row.channel) ?? 'all', row.severity)) continue
        const admitted = this.#budgets.admit(r.sub, row.channel, row.severity)
        if (admitted !== 'send') {
          this.#held.inc()
          if (admitted === 'summary') batch.summary(r.sub)
          continue
        }
        payload ??= pushPayload(row)
        batch.push(r.sub, payload, urgencyOf(row.severity))
      }
    }
    await batch.run()
  }

  /** The summaries the budgets now allow, for notifications held in earlier passes. */
  async #sendSummaries(): Promise<void> {
    const due = this.#budgets.due()
    if (due.length === 0) return
    const batch = this.#batch()
    for (const sub of due) batch.summary(sub)
    await batch.run()
  }

  /** Pushes sent together: at most CONCURRENCY at once, outcomes recorded once at the end. */
  #batch() {
    const jobs: (() => Promise<void>)[] = []
    const gone = new Set<string>()
    const delivered = new Set<string>()
    const send = async (sub: PushSubscriptionRow, body: string, urgency: ReturnType<typeof urgencyOf>) => {
      if (gone.has(sub.id)) return
      const outcome = await this.#sender.send(sub, body, urgency)
      this.#deliveries.inc({ result: outcome.result })
      if (outcome.result === 'gone') {
        gone.add(sub.id)
        this.#budgets.forget(sub.id)
        await deleteSubscription(this.#db, sub.id)
        this.#logger.info({ subscription: sub.id, status: outcome.status }, 'push subscription expired; removed')
      } else if (outcome.result === 'failed') {
        this.#logger.warn({ subscription: sub.id, status: outcome.status, reason: outcome.reason }, 'push failed')
        await recordFailure(this.#db, sub.id, `${outcome.status ?? 'error'} at ${new Date().toISOString()}`)
      } else delivered.add(sub.id)
    }
    return {
      push: (sub: PushSubscriptionRow, body: string, urgency: ReturnType<typeof urgencyOf>) =>
        jobs.push(() => send(sub, body, urgency)),
      // What is held is read when the job runs: later notifications of this pass fold in too.
      summary: (sub: PushSubscriptionRow) =>
        jobs.push(async () => {
          const held = this.#budgets.take(sub.id)
          if (held) await send(sub, summaryPayload(held, new Date().toISOString()), urgencyOf(held.severity))
        }),
      run: async () => {
        await runLimited(jobs, CONCURRENCY, (err) => this.#logger.error({ err }, 'push delivery failed'))
        // One write per pass for the successes, not one per message.
        for (const id of gone) delivered.delete(id)
        if (delivered.size > 0) await recordSuccess(this.#db, [...delivered])
      },
    }
  }
}

/** Run the jobs with at most `limit` at once; a job that throws is reported and the rest go on. */
async function runLimited(
  jobs: (() => Promise<void>)[],
  limit: number,
  onError: (err: unknown) => void,
): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++]
      await job?.().catch(onError)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker))
}
