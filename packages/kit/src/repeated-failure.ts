/**
 * The log of a background pass that fails again and again (a database down, restarting or turned
 * read-only): the first failure is logged in full, then at most one line per `everyMs` saying how
 * many failures it stands for, and one line when a pass succeeds again. A pass every two seconds
 * otherwise writes a stack trace every two seconds for as long as the outage lasts, burying the
 * line that said what went wrong.
 */
import type { Logger } from './logger.ts'

export interface RepeatedFailureOptions {
  /** The failure's line: `'push delivery pass failed'`. */
  failed: string
  /** The line once it works again: `'push delivery passes work again'`. */
  recovered: string
  /** Between two failure lines while it goes on failing. Default a minute. */
  everyMs?: number
  level?: 'warn' | 'error'
}

export class RepeatedFailure {
  readonly #logger: Logger
  readonly #failed: string
  readonly #recovered: string
  readonly #everyMs: number
  readonly #level: 'warn' | 'error'
  #failing = false
  #loggedAt = Number.NEGATIVE_INFINITY
  /** Failures since the last line. */
  #unlogged = 0
  /** Failures since the pass last succeeded. */
  #total = 0

  constructor(logger: Logger, options: RepeatedFailureOptions) {
    this.#logger = logger
    this.#failed = options.failed
    this.#recovered = options.recovered
    this.#everyMs = options.everyMs ?? 60_000
    this.#level = options.level ?? 'error'
  }

  /** A pass failed: logged if it is the first, or the last line is `everyMs` old. */
  failed(err: unknown): void {
    this.#failing = true
    this.#total++
    const now = performance.now()
    if (now - this.#loggedAt < this.#everyMs) {
      this.#unlogged++
      return
    }
    const repeated = this.#unlogged > 0 ? { repeated: this.#unlogged + 1 } : {}
    this.#logger[this.#level]({ err, ...repeated }, this.#failed)
    this.#loggedAt = now
    this.#unlogged = 0
  }

  /** A pass succeeded: after failures, one line saying so. */
  succeeded(): void {
    if (!this.#failing) return
    this.#logger.info({ failures: this.#total }, this.#recovered)
    this.#failing = false
    this.#loggedAt = Number.NEGATIVE_INFINITY
    this.#unlogged = 0
    this.#total = 0
  }
}
