/**
 * The background loop of the web enforcement controller: a pass at start and every
 * `--web-enforcement-interval`, never two at once in a process (and never two at once across
 * processes: see `runPass`). Runs in every mode: in disabled mode a pass only revokes
 * automated blocks left from before (the kill switch by restart).
 */
import type { AppMetrics, DatabaseKind, Logger } from '@gatehouse/kit'
import { periodic } from '@gatehouse/kit/periodic.ts'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { type EnforcementSettings, runPass } from './service.ts'

export interface ControllerOptions {
  db: Kysely<DB>
  kind: DatabaseKind
  settings: EnforcementSettings
  intervalMs: number
  log: Logger
  metrics: AppMetrics
}

export function startController(o: ControllerOptions): () => Promise<void> {
  const passes = o.metrics.counter('web_controller_passes_total', 'Web enforcement controller passes', ['result'])
  const written = o.metrics.counter('web_automated_decisions_total', 'Automated decisions written', ['action'])
  const job = periodic(
    async () => {
      const r = await runPass(o.db, o.kind, o.settings, Date.now())
      passes.inc({ result: r.ran ? 'ran' : 'busy' })
      written.inc({ action: 'block' }, r.blocked)
      written.inc({ action: 'renew' }, r.renewed)
      written.inc({ action: 'revoke' }, r.revoked)
      if (r.blocked + r.renewed + r.revoked > 0) o.log.info(r, 'web enforcement pass')
    },
    {
      intervalMs: o.intervalMs,
      firstRunMs: 0,
      metrics: { app: o.metrics, job: 'web_enforcement' },
      onError: (err) => {
        passes.inc({ result: 'failed' })
        o.log.error({ err }, 'web enforcement pass failed (rolled back)')
      },
    },
  )
  return job.stop
}
