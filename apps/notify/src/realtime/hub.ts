/**
 * The realtime fan-out of one notify process. Every connected stream of every reader is a
 * subscriber; one serial loop (a "pass") reads what is new since the hub's position, once
 * for all subscribers, and writes each event to the subscribers allowed to see it.
 *
 * A pass starts when this process stored something (`wake()`), when PostgreSQL reports a
 * commit by any process (its LISTEN session, server.ts), and on a slow poll that only repairs a
 * lost LISTEN connection. Attaching a subscriber runs in the same serial loop: its
 * catch-up from Last-Event-ID reads up to the hub's position and live events continue
 * from there, so nothing falls between the two and nothing is sent twice.
 *
 * Visibility is the inbox's rule (channels/access.ts): administrators see every channel,
 * others the public channels and the private ones they are members of. It is computed when
 * a stream attaches and recomputed from the database on every channel or membership change
 * (and a reader that was deleted or disabled loses the stream).
 */
import type { Logger } from '@gatehouse/kit'
import { RepeatedFailure } from '@gatehouse/kit/repeated-failure.ts'
import type { Kysely } from 'kysely'
import type { Reader } from '../auth/guard.ts'
import { readableChannelNames } from '../channels/access.ts'
import type { DB, NotificationRow, StreamChangeRow } from '../db/schema.ts'
import { notificationResponse } from '../inbox/routes.ts'
import { SESSIONS_ENDED } from './changes.ts'
import { formatPosition, type Position } from './position.ts'

/** Where a subscriber's bytes go (an HTTP response in routes.ts, a test double elsewhere). */
export interface StreamSink {
  write(chunk: string | Uint8Array): void
  /** Bytes written but not yet taken by the socket. */
  readonly buffered: number
  close(): void
}

export interface Subscriber {
  reader: Reader
  /** Channels the reader may see; undefined: all (administrator). */
  visible: Set<string> | undefined
  /** Same number for subscribers that see the same channels (they receive the same bytes). */
  visId: number
  /** The last notification and change this subscriber was sent (or skipped past). */
  pos: Position
  sink: StreamSink
  /** Events of the current pass not yet written: one write per subscriber per pass. */
  out: string
}

export interface StreamHubOptions {
  /** Safety-net pass interval (ms); LISTEN or local wake-ups deliver without it. */
  pollMs?: number
  /** Comment line interval (ms) that keeps proxies from closing an idle stream. */
  keepaliveMs?: number
  /** A subscriber whose socket holds more unsent bytes is dropped (it resumes by Last-Event-ID). */
  maxBufferedBytes?: number
  /**
   * Longest planned wait between two passes (ms). A pass costs a socket write per stream
   * (and the reader a read), whatever the number of events it carries, so passes are spaced
   * by 100 µs per connected stream, up to this: while deliveries pour in, each pass carries
   * a batch (1,000 streams: a pass every 100 ms, 10,000 socket writes per second), and a
   * handful of streams wait next to nothing. The wait is never shorter than the previous
   * pass took: when the process gets too little CPU for its passes (a busy host), the fan-out
   * takes at most half of its time and the hooks keep being answered.
   */
  maxPassGapMs?: number
}

const PAGE = 500
/**
 * A resumed stream further behind than this many notifications or changes (ids) gets a
 * `reset` instead of the events it missed: after an outage every client resumes at once, and
 * replaying thousands of events each would hold the hub (every stream's live delivery waits
 * on its serial loop) and overflow the client's buffer, which reconnects and asks again.
 */
export const RESUME_LIMIT = 1000
/** Time between passes per connected stream (see maxPassGapMs). */
const PASS_GAP_PER_STREAM_MS = 0.1

export class StreamHub {
  readonly #db: Kysely<DB>
  /** Passes failing run after run (the database down) are logged once a minute. */
  readonly #passFailures: RepeatedFailure
  readonly #options: Required<StreamHubOptions>
  readonly #subs = new Set<Subscriber>()
  #pos: Position = { n: 0, c: 0 }
  /** Passes ran with no subscriber and left #pos where it was (see #pass). */
  #behind = false
  #queue: Promise<unknown> = Promise.resolve()
  #passQueued = false
  /** When the last pass ended, and how long it took (performance.now(), ms). */
  #lastPassEnd = 0
  #lastPassMs = 0
  #passing = false
  /** Interned visibility sets: subscribers with equal sets share an id. */
  readonly #visIds = new Map<string, number>()
  #nextVisId = 1
  #timers: NodeJS.Timeout[] = []
  #closed = false

  constructor(db: Kysely<DB>, logger: Logger, options: StreamHubOptions = {}) {
    this.#db = db
    this.#passFailures = new RepeatedFailure(logger, {
      failed: 'realtime stream pass failed',
      recovered: 'realtime stream passes work again',
    })
    this.#options = { pollMs: 2000, keepaliveMs: 25_000, maxBufferedBytes: 1 << 20, maxPassGapMs: 100, ...options }
  }

  get subscriberCount(): number {
    return this.#subs.size
  }

  /** Start at the newest notification and change (earlier ones are read through the inbox API). */
  async start(): Promise<void> {
    await this.#enqueue(async () => {
      this.#pos = await this.#newest()
    })
    this.#timers.push(setInterval(() => this.wake(), this.#options.pollMs).unref())
    this.#timers.push(setInterval(() => this.#keepalive(), this.#options.keepaliveMs).unref())
  }

  /** Something was committed: run a pass soon (calls while one is queued coalesce). */
  wake(): void {
    if (this.#passQueued || this.#closed) return
    this.#passQueued = true
    // A pass running now plans the next one when it ends (the gap counts from its end).
    if (!this.#passing) this.#plan()
  }

  /** Run the queued pass once the gap after the previous one has passed. */
  #plan(): void {
    const run = () =>
      void this.#enqueue(async () => {
        this.#passQueued = false
        this.#passing = true
        const start = performance.now()
        try {
          await this.#pass()
        } finally {
          this.#passing = false
          this.#lastPassEnd = performance.now()
          this.#lastPassMs = this.#lastPassEnd - start
          if (this.#passQueued && !this.#closed) this.#plan()
        }
      })
    const gap = Math.max(
      Math.min(this.#options.maxPassGapMs, this.#subs.size * PASS_GAP_PER_STREAM_MS),
      this.#lastPassMs,
    )
    const wait = this.#lastPassEnd + gap - performance.now()
    if (wait > 0) setTimeout(run, wait)
    else run()
  }

  /**
   * Add a stream for `reader`, first sending what it missed after `from` (a resumed stream)
   * or nothing (a new one), then a `ready` event carrying the position. A resume that cannot
   * be replayed (too far behind, or past changes pruned by retention) gets a `reset` before
   * `ready`: the client reloads what it shows.
   */
  attach(reader: Reader, sink: StreamSink, from?: Position): Promise<Subscriber> {
    return this.#enqueue(async () => {
      // A pass waiting out the gap between passes runs now: a resumed stream gets everything
      // committed so far before `ready`, as it would without the gap.
      if (this.#passQueued) await this.#pass()
      if (this.#behind && this.#subs.size === 0) {
        this.#pos = await this.#newest()
        this.#behind = false
      }
      const sub: Subscriber = {
        reader: { ...reader },
        visible: undefined,
        visId: 0,
        pos: { ...this.#pos },
        sink,
        out: '',
      }
      if (!(await this.#refresh(sub))) throw new TypeError('attach: the reader no longer exists')
      if (from) {
        sub.pos = { ...from }
        const tooFar = this.#pos.n - from.n > RESUME_LIMIT || this.#pos.c - from.c > RESUME_LIMIT
        // A position ahead of this process (sent by another one) is kept: live events skip up to it.
        if (!tooFar) await this.#catchUp(sub, this.#pos)
        sub.pos = { n: Math.max(sub.pos.n, this.#pos.n), c: Math.max(sub.pos.c, this.#pos.c) }
        // Read after the catch-up: a change pruned before the catch-up could read it leaves the
        // oldest kept id past it, so a change missed that way is always noticed here.
        if (tooFar || from.c < (await this.#oldestChange()) - 1) {
          this.#send(sub, 'reset', JSON.stringify({ position: formatPosition(sub.pos) }))
        }
      }
      this.#send(sub, 'ready', JSON.stringify({ position: formatPosition(sub.pos) }))
      this.#flush(sub)
      if (!this.#closed) this.#subs.add(sub)
      return sub
    })
  }

  detach(sub: Subscriber): void {
    this.#subs.delete(sub)
  }

  /** End every stream (server shutdown) and stop the timers. */
  async close(): Promise<void> {
    this.#closed = true
    for (const t of this.#timers) clearInterval(t)
    await this.#queue
    for (const sub of this.#subs) sub.sink.close()
    this.#subs.clear()
  }

  #enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn)
    this.#queue = run.then(
      () => this.#passFailures.succeeded(),
      (err: unknown) => this.#passFailures.failed(err),
    )
    return run
  }

  /** The newest notification and change ids (0 for none). */
  async #newest(): Promise<Position> {
    const n = await this.#db
      .selectFrom('notifications')
      .select((eb) => eb.fn.max('id').as('id'))
      .executeTakeFirst()
    const c = await this.#db
      .selectFrom('stream_changes')
      .select((eb) => eb.fn.max('id').as('id'))
      .executeTakeFirst()
    return { n: Number(n?.id ?? 0), c: Number(c?.id ?? 0) }
  }

  async #pass(): Promise<void> {
    if (this.#subs.size === 0) {
      // Nobody to send to: read nothing (a process that takes hooks with no stream open would
      // otherwise read every notification it stored, or two positions per batch). The next
      // stream to attach first moves the hub to the newest rows (see attach).
      this.#behind = true
      return
    }
    const shared = new Map<Subscriber, Buffer[]>()
    for (;;) {
      const rows = await this.#notificationsAfter(this.#pos.n, Number.MAX_SAFE_INTEGER)
      if (rows.length > 0) this.#fanOut(rows, shared)
      if (rows.length < PAGE) break
    }
    for (;;) {
      const rows = await this.#changesAfter(this.#pos.c, Number.MAX_SAFE_INTEGER)
      for (const row of rows) {
        const id = Number(row.id)
        this.#pos.c = id
        await this.#applyAccessChange(row)
        for (const sub of this.#subs) {
          if (id <= sub.pos.c || !concerns(sub, row)) continue
          sub.pos.c = id
          this.#send(sub, row.kind, row.data)
        }
      }
      if (rows.length < PAGE) break
    }
    for (const sub of this.#subs) {
      // Every stream has now been sent, or skipped past, everything up to the hub's position.
      sub.pos = { n: Math.max(sub.pos.n, this.#pos.n), c: Math.max(sub.pos.c, this.#pos.c) }
      for (const bytes of shared.get(sub) ?? []) sub.sink.write(bytes)
      this.#flush(sub)
    }
  }

  /**
   * New notifications to every subscriber. Subscribers that see the same channels from the
   * same position receive the same bytes, so those are built and encoded once per group and
   * the same buffer is written to each of their sockets (with 1,000 streams on a handful of
   * visibility sets, this is what keeps a pass cheap).
   */
  #fanOut(rows: NotificationRow[], shared: Map<Subscriber, Buffer[]>): void {
    const groups = new Map<string, Subscriber[]>()
    for (const sub of this.#subs) {
      const key = `${sub.visId}|${sub.pos.n}|${sub.pos.c}`
      const group = groups.get(key)
      if (group) group.push(sub)
      else groups.set(key, [sub])
    }
    const json = new Map<NotificationRow, string>()
    for (const members of groups.values()) {
      const lead = members[0]!
      let n = lead.pos.n
      let out = ''
      for (const row of rows) {
        const id = Number(row.id)
        if (id <= n || !sees(lead, row.channel)) continue
        n = id
        let data = json.get(row)
        if (data === undefined) {
          data = JSON.stringify({ notification: notificationResponse(row, false) })
          json.set(row, data)
        }
        out += `id: ${n}-${lead.pos.c}\nevent: notification\ndata: ${data}\n\n`
      }
      if (out === '') continue
      const bytes = Buffer.from(out)
      for (const sub of members) {
        sub.pos.n = n
        const list = shared.get(sub)
        if (list) list.push(bytes)
        else shared.set(sub, [bytes])
      }
    }
    this.#pos.n = Number(rows.at(-1)!.id)
  }

  /** Send `sub` what happened after its position, up to `to` (inclusive). */
  async #catchUp(sub: Subscriber, to: Position): Promise<void> {
    while (sub.pos.n < to.n) {
      const rows = await this.#notificationsAfter(sub.pos.n, to.n)
      for (const row of rows) {
        sub.pos.n = Number(row.id)
        if (sees(sub, row.channel))
          this.#send(sub, 'notification', JSON.stringify({ notification: notificationResponse(row, false) }))
      }
      this.#flush(sub)
      if (rows.length < PAGE) sub.pos.n = Math.max(sub.pos.n, to.n)
    }
    while (sub.pos.c < to.c) {
      const rows = await this.#changesAfter(sub.pos.c, to.c)
      for (const row of rows) {
        sub.pos.c = Number(row.id)
        if (concerns(sub, row)) this.#send(sub, row.kind, row.data)
      }
      this.#flush(sub)
      if (rows.length < PAGE) sub.pos.c = Math.max(sub.pos.c, to.c)
    }
  }

  /** The oldest change still kept (0 for none): changes before it were pruned (retention.ts). */
  async #oldestChange(): Promise<number> {
    const row = await this.#db
      .selectFrom('stream_changes')
      .select((eb) => eb.fn.min('id').as('id'))
      .executeTakeFirst()
    return Number(row?.id ?? 0)
  }

  #notificationsAfter(after: number, upTo: number): Promise<NotificationRow[]> {
    return this.#db
      .selectFrom('notifications')
      .selectAll()
      .where('id', '>', after)
      .where('id', '<=', upTo)
      .orderBy('id')
      .limit(PAGE)
      .execute()
  }

  #changesAfter(after: number, upTo: number): Promise<StreamChangeRow[]> {
    return this.#db
      .selectFrom('stream_changes')
      .selectAll()
      .where('id', '>', after)
      .where('id', '<=', upTo)
      .orderBy('id')
      .limit(PAGE)
      .execute()
  }

  /** Channel and membership changes: re-check who may see what before delivering. */
  async #applyAccessChange(row: StreamChangeRow): Promise<void> {
    if (row.kind !== 'channel' && row.kind !== 'membership') return
    const sessionsEnded = row.kind === 'membership' && JSON.parse(row.data).change === SESSIONS_ENDED
    for (const sub of [...this.#subs]) {
      if (row.kind === 'membership' && sub.reader.id !== row.user_id) continue
      // Ended sessions end the streams they opened (a client with a valid credential reconnects).
      if (sessionsEnded || !(await this.#refresh(sub))) {
        this.#subs.delete(sub)
        sub.sink.close()
      }
    }
  }

  /** Reload the reader's administrator flag and visible channels; false when it is gone or disabled. */
  async #refresh(sub: Subscriber): Promise<boolean> {
    const user = await this.#db
      .selectFrom('users')
      .select(['is_admin', 'enabled'])
      .where('id', '=', sub.reader.id)
      .executeTakeFirst()
    if (user?.enabled !== 1) return false
    sub.reader.isAdmin = user.is_admin === 1
    const names = await readableChannelNames(this.#db, sub.reader)
    sub.visible = names === undefined ? undefined : new Set(names)
    const key = names === undefined ? '*' : names.sort().join('\n')
    let visId = this.#visIds.get(key)
    if (visId === undefined) {
      // Ids are never reused: forgetting old sets (memory bound) only splits groups, never merges them.
      if (this.#visIds.size >= 10_000) this.#visIds.clear()
      visId = this.#nextVisId++
      this.#visIds.set(key, visId)
    }
    sub.visId = visId
    return true
  }

  #send(sub: Subscriber, event: string, data: string): void {
    sub.out += `id: ${formatPosition(sub.pos)}\nevent: ${event}\ndata: ${data}\n\n`
  }

  /** Write what the pass gathered for `sub`; drop a subscriber that does not read. */
  #flush(sub: Subscriber): void {
    if (sub.out === '') return
    sub.sink.write(sub.out)
    sub.out = ''
    if (sub.sink.buffered > this.#options.maxBufferedBytes) {
      this.#subs.delete(sub)
      sub.sink.close()
    }
  }

  #keepalive(): void {
    for (const sub of this.#subs) sub.sink.write(': keepalive\n\n')
  }
}

function sees(sub: Subscriber, channel: string): boolean {
  return sub.visible === undefined || sub.visible.has(channel)
}

/** Whether a change goes to this subscriber: its own (user-scoped) or its channels' ones. */
function concerns(sub: Subscriber, row: StreamChangeRow): boolean {
  if (row.user_id !== null) return row.user_id === sub.reader.id
  return row.channel === null || sees(sub, row.channel)
}
