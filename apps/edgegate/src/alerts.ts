/**
 * Alerts to the team's notification channel. The events someone has to act on (a node gone
 * silent and back, the TLS certificate near expiry or expired, a database restored behind its
 * gates) are POSTed to `--alert-url` the ntfy way: the text as the body, and `Title`,
 * `Priority` and `Tags` headers. Gatehouse's notify takes that at `/hooks/<token>`, and so does
 * an ntfy topic URL, so a team learns of a dark gate without a Prometheus setup.
 *
 * The channel is down exactly when alerts matter most (the same outage that silenced a gate
 * may have taken notify with it), so an alert that cannot be delivered waits: alerts go out one
 * at a time, in the order raised, and a failed one (no answer, a 5xx, a 408 or 429) is tried
 * again after 2 s, doubling to 5 minutes, with the rest queued behind it. One delivered late
 * says when it was raised. The queue holds the newest 100; older ones are dropped and counted,
 * so a channel gone for days costs bounded memory. A 4xx is the channel refusing this URL (a
 * rotated token, a wrong path): retrying cannot help, so that alert is logged and dropped.
 * Nothing here blocks a request or the controller; the queue lives in memory, and what it holds
 * at shutdown is named in the log. Each event's own log line is written when it happens.
 *
 * A bad day raises many alerts of one kind at once: a partition silences forty gates, a restore
 * puts the database behind all of them. Alerts with a `group` go out as one per kind: the first
 * waits 15 s for the others, and one still waiting in the queue (the channel down) takes in any
 * raised later, so the team reads "40 nodes are silent: …" once instead of forty alerts, and
 * the queue's bound is not spent on them.
 */

import type { AppMetrics } from '@gatehouse/kit'
import { HttpClientError, type Logger, requestNoRedirect } from '@gatehouse/kit'
import { formatMillis } from './timestamps.ts'

export interface Alert {
  title: string
  message: string
  priority: 'default' | 'high' | 'urgent'
  tags: string[]
  /** Send with the other alerts of `key` raised meanwhile; the merged title is `<n> <plural>: <subjects>`. */
  group?: { key: string; subject: string; plural: string }
}

export type AlertSink = (alert: Alert) => void

export interface AlertChannel {
  send: AlertSink
  /** Posts waiting: alerts raised and not yet delivered, a group counting once. */
  pending(): number
  /** Stop retrying; logs what was still waiting. */
  stop(): void
}

const QUEUE_LIMIT = 100
const FIRST_RETRY_MS = 2_000
const LAST_RETRY_MS = 5 * 60_000
const GROUP_WAIT_MS = 15_000
/** Alerts one grouped alert takes in; later ones of its kind are dropped and counted. */
const GROUP_LIMIT = 1_000
/** Messages a grouped alert's body quotes at most. */
const GROUP_MESSAGES = 20
/** Subjects a grouped alert names; the rest are counted. */
const GROUP_SUBJECTS = 50
/**
 * A grouped alert's body stays under ntfy's default message limit (4,096 bytes; a larger one
 * becomes an attachment there, or is refused without an attachment cache).
 */
const GROUP_BODY_BYTES = 3_800
const PRIORITIES = ['default', 'high', 'urgent'] as const

/** One queued alert, or several of one group: what one POST sends. */
interface Held {
  members: Alert[]
  raisedAt: number
  /** Not sent before: the group's wait. */
  readyAt: number
}

/** The title, body, priority and tags a held alert is sent with. */
function compose(h: Held): Alert {
  const [first] = h.members as [Alert, ...Alert[]]
  if (h.members.length === 1 || !first.group) return first
  const subjects = [...new Set(h.members.map((m) => m.group?.subject ?? m.title))]
  const named = subjects.slice(0, GROUP_SUBJECTS)
  if (subjects.length > named.length) named.push(`and ${subjects.length - named.length} more`)
  const title = `${subjects.length} ${first.group.plural}: ${named.join(', ')}`
  let message = title
  let quoted = 0
  for (const m of h.members.slice(0, GROUP_MESSAGES)) {
    const next = `${message}\n\n${m.message}`
    if (Buffer.byteLength(next) > GROUP_BODY_BYTES) break
    message = next
    quoted++
  }
  const rest = h.members.length - quoted
  return {
    title,
    message: rest > 0 ? `${message}\n\n(and ${rest} more like these)` : message,
    priority: PRIORITIES[Math.max(...h.members.map((m) => PRIORITIES.indexOf(m.priority)))]!,
    tags: [...new Set(h.members.flatMap((m) => m.tags))],
  }
}

/** POST one alert to the channel the ntfy way; rejects with the kit's HttpClientError on a non-2xx answer. */
export function postAlert(url: string, a: Alert) {
  return requestNoRedirect(url, {
    method: 'POST',
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      // A header takes printable ASCII only (a file name could hold anything).
      title: `edgegate: ${a.title}`.replace(/[^\x20-\x7e]/g, '?').slice(0, 200),
      priority: a.priority,
      tags: ['edgegate', ...a.tags].join(','),
    },
    body: a.message,
    timeoutMs: 10_000,
    maxBytes: 64 * 1024,
  })
}

/** A channel that POSTs to `url`, or drops everything without one. */
export function alertChannel(
  url: string | undefined,
  logger: Pick<Logger, 'warn' | 'info' | 'error'>,
  options: {
    metrics?: Pick<AppMetrics, 'counter' | 'gauge'>
    firstRetryMs?: number
    groupWaitMs?: number
    now?: () => number
  } = {},
): AlertChannel {
  if (url === undefined) return { send: () => {}, pending: () => 0, stop: () => {} }
  const now = options.now ?? Date.now
  const firstRetry = options.firstRetryMs ?? FIRST_RETRY_MS
  const groupWait = options.groupWaitMs ?? GROUP_WAIT_MS
  // The URL holds the hook token: logged by its origin only.
  const where = new URL(url).origin
  const queue: Held[] = []
  const results = options.metrics?.counter(
    'alerts_total',
    'Alerts by outcome (delivered, refused: a 4xx from the channel, dropped: the queue was full)',
    ['result'],
  )
  options.metrics?.gauge('alerts_queued', 'Alerts waiting for the channel to answer', [], (g) => g.set(queue.length))
  let sending = false
  let failures = 0
  let timer: NodeJS.Timeout | undefined
  let stopped = false

  let inFlight: Held | undefined

  const post = (h: Held) => {
    const a = compose(h)
    const late = now() - h.readyAt > firstRetry
    return postAlert(
      url,
      late
        ? {
            ...a,
            message: `${a.message}\n\n(raised at ${formatMillis(h.raisedAt)}; held while the channel was unreachable)`,
          }
        : a,
    )
  }

  // The head may have been dropped by an overflow while it was in flight.
  const settle = (a: Held) => {
    const i = queue.indexOf(a)
    if (i >= 0) queue.splice(i, 1)
  }

  const drain = async () => {
    if (sending || stopped) return
    sending = true
    try {
      while (queue.length > 0 && !stopped) {
        const head = queue[0]!
        const wait = head.readyAt - now()
        if (wait > 0) {
          schedule(wait)
          return
        }
        try {
          inFlight = head
          await post(head)
          results?.inc({ result: 'delivered' }, head.members.length)
          settle(head)
          if (failures > 0) {
            logger.info(
              { to: where, waiting: queue.length },
              'alert channel answers again; held alerts are being delivered',
            )
            failures = 0
          }
        } catch (err) {
          const status = err instanceof HttpClientError ? err.statusCode : undefined
          if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) {
            settle(head)
            results?.inc({ result: 'refused' }, head.members.length)
            logger.error(
              { alert: compose(head).title, to: where, status },
              'alert refused by the channel (check --alert-url: a rotated token or a wrong path); not retried',
            )
            continue
          }
          const delay = Math.min(LAST_RETRY_MS, firstRetry * 2 ** failures)
          failures++
          logger.warn(
            {
              alert: compose(head).title,
              to: where,
              reason: (err as Error).message,
              waiting: queue.length,
              retry_in_ms: delay,
            },
            'alert not delivered; it waits and is tried again',
          )
          schedule(delay)
          return
        } finally {
          inFlight = undefined
        }
      }
    } finally {
      sending = false
    }
  }

  /** Drain again after `ms`; meanwhile new alerts queue behind the head. */
  const schedule = (ms: number) => {
    timer = setTimeout(() => {
      timer = undefined
      void drain()
    }, ms)
    timer.unref()
  }

  return {
    send(a) {
      if (stopped) return
      const key = a.group?.key
      const open = key === undefined ? undefined : queue.find((h) => h !== inFlight && h.members[0]!.group?.key === key)
      if (open) {
        if (open.members.length < GROUP_LIMIT) open.members.push(a)
        else results?.inc({ result: 'dropped' })
        return
      }
      const t = now()
      queue.push({ members: [a], raisedAt: t, readyAt: key === undefined ? t : t + groupWait })
      if (queue.length > QUEUE_LIMIT) {
        const dropped = queue.splice(0, queue.length - QUEUE_LIMIT)
        results?.inc(
          { result: 'dropped' },
          dropped.reduce((n, h) => n + h.members.length, 0),
        )
        logger.warn(
          { dropped: dropped.map((h) => compose(h).title) },
          'alert queue full: the oldest alerts are dropped',
        )
      }
      // While a retry is scheduled, new alerts wait behind the one being retried.
      if (timer === undefined) void drain()
    },
    pending: () => queue.length,
    stop() {
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
      if (queue.length > 0) {
        logger.warn({ alerts: queue.map((h) => compose(h).title), to: where }, 'alerts not delivered before shutdown')
      }
    },
  }
}
