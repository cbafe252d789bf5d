/** What route modules are given: the database, its dialect, guards, settings and metrics. */
import type { AppMetrics, DatabaseKind, Logger } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { makeGuards } from './auth/guards.ts'
import type { DB } from './db/schema.ts'
import type { EnforcementSettings } from './enforcement/service.ts'
import type { TrustedRanges } from './trusted/ranges.ts'

export interface AppContext {
  db: Kysely<DB>
  kind: DatabaseKind
  guards: ReturnType<typeof makeGuards>
  metrics: AppMetrics
  log: Logger
  /** Present when trusted-source discovery is configured. */
  trusted: TrustedRanges | undefined
  settings: {
    sightingRetentionMs: number
    sessionTtlMs: number
    policyPageSize: number
  }
  /** Web candidates, the shadow policy and the enforcement controller (`--web-*`). */
  web: EnforcementSettings
}
