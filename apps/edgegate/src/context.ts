/**
 * What route modules are given: the kit's base context (config, logger, clock, metrics, and the
 * database: Kysely as `database.db`, its dialect as `database.kind`) plus guards and settings.
 */
import type { BaseContext } from '@gatehouse/kit'
import type { AlertSink } from './alerts.ts'
import type { makeGuards } from './auth/guards.ts'
import type { ServeConfig } from './config.ts'
import type { DB } from './db/schema.ts'
import type { EnforcementSettings } from './enforcement/service.ts'
import type { TrustedRanges } from './trusted/ranges.ts'

export interface AppContext extends BaseContext<ServeConfig, DB> {
  guards: ReturnType<typeof makeGuards>
  /** Present when trusted-source discovery is configured. */
  trusted: TrustedRanges | undefined
  settings: {
    sightingRetentionMs: number
    sessionTtlMs: number
    policyPageSize: number
  }
  /** Web candidates, the shadow policy and the enforcement controller (`--web-*`). */
  web: EnforcementSettings
  /** `--alert-url`, or nothing: the events someone has to act on (alerts.ts). */
  alert: AlertSink
}
