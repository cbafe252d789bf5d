/**
 * How many pushes one browser gets in a storm. A sender gone wrong (an alert rule flapping, a
 * loop between two hooks) stores hundreds of notifications a minute; the inbox should have
 * every one, but a phone buzzing for each is how a team learns to turn push off. So each
 * subscription has a budget: `burst` pushes at once, then one per `intervalMs`. A
 * notification past the budget is held, and the next push the budget allows is a summary of
 * everything held ("12 more notifications", by channel, at the highest severity among them),
 * which opens the inbox. Nothing is lost: the inbox and the stream are not limited.
 *
 * The budget lives in the process that pushes (push_cursor gives each pass to one process),
 * so a storm spread over several processes gets up to their number of bursts.
 */
import type { PushSubscriptionRow, Severity } from '../db/schema.ts'

const RANK: readonly Severity[] = ['info', 'success', 'warning', 'error', 'critical']

/** What a summary push says. */
export interface HeldSummary {
  count: number
  /** Held per channel, the most held first. */
  channels: Array<{ channel: string; count: number }>
  severity: Severity
}

interface Budget {
  tokens: number
  at: number
  held: number
  channels: Map<string, number>
  severity: Severity
  sub: PushSubscriptionRow
}

export class PushBudgets {
  readonly #burst: number
  readonly #intervalMs: number
  readonly #now: () => number
  readonly #budgets = new Map<string, Budget>()

  /** `burst` 0: no limit. */
  constructor(burst: number, intervalMs: number, now: () => number = Date.now) {
    this.#burst = burst
    this.#intervalMs = intervalMs
    this.#now = now
  }

  #budget(sub: PushSubscriptionRow): Budget {
    const now = this.#now()
    let b = this.#budgets.get(sub.id)
    if (!b) {
      b = { tokens: this.#burst, at: now, held: 0, channels: new Map(), severity: 'info', sub }
      this.#budgets.set(sub.id, b)
    } else {
      b.tokens = Math.min(this.#burst, b.tokens + (now - b.at) / this.#intervalMs)
      b.at = now
      b.sub = sub
    }
    return b
  }

  /**
   * A notification for `sub`: `send` when the budget allows it alone, `summary` when it allows
   * one push and earlier ones are held (the notification is folded into the summary), `held`
   * when it allows none.
   */
  admit(sub: PushSubscriptionRow, channel: string, severity: Severity): 'send' | 'summary' | 'held' {
    if (this.#burst === 0) return 'send'
    const b = this.#budget(sub)
    if (b.tokens >= 1 && b.held === 0) {
      b.tokens -= 1
      return 'send'
    }
    b.held++
    b.channels.set(channel, (b.channels.get(channel) ?? 0) + 1)
    if (RANK.indexOf(severity) > RANK.indexOf(b.severity)) b.severity = severity
    if (b.tokens < 1) return 'held'
    b.tokens -= 1
    return 'summary'
  }

  /** The summary of what is held for `sub`, now that it is being sent; resets the count. */
  take(subId: string): HeldSummary | undefined {
    const b = this.#budgets.get(subId)
    if (!b || b.held === 0) return undefined
    const summary: HeldSummary = {
      count: b.held,
      channels: [...b.channels].map(([channel, count]) => ({ channel, count })).sort((x, y) => y.count - x.count),
      severity: b.severity,
    }
    b.held = 0
    b.channels.clear()
    b.severity = 'info'
    return summary
  }

  /** Subscriptions whose held notifications the budget now lets out as a summary (spends the push). */
  due(): PushSubscriptionRow[] {
    const out: PushSubscriptionRow[] = []
    for (const [id, b] of this.#budgets) {
      const tokens = Math.min(this.#burst, b.tokens + (this.#now() - b.at) / this.#intervalMs)
      if (b.held === 0) {
        // Full again and nothing held: nothing to remember.
        if (tokens >= this.#burst) this.#budgets.delete(id)
        continue
      }
      if (tokens < 1) continue
      b.tokens = tokens - 1
      b.at = this.#now()
      out.push(b.sub)
    }
    return out
  }

  forget(subId: string): void {
    this.#budgets.delete(subId)
  }
}
