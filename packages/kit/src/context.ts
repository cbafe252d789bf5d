/**
 * The base of every app's context: what route modules, services and CLI commands are given.
 * Apps extend it with their own services (guards, stores, caches); the five fields keep their
 * names everywhere so a reader moving between apps finds them.
 */
import type { Database } from './db/database.ts'
import type { Logger } from './logger.ts'
import type { AppMetrics } from './metrics.ts'

/** Where "now" comes from: tests pass a fake one instead of sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/**
 * @example interface AppContext extends BaseContext<Config, DB> { guards: Guards }
 */
export interface BaseContext<Config, DB> {
  config: Config
  logger: Logger
  database: Database<DB>
  clock: Clock
  metrics: AppMetrics
}
