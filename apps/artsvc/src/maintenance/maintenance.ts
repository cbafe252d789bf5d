/**
 * Periodic cleanup every ARTSVC_MAINTENANCE_INTERVAL: expired upload sessions and their
 * staged ZIPs, staged or temp files no session owns (abandoned), expired browser sessions
 * and OIDC states, and audit records older than ARTSVC_AUDIT_RETENTION. Published blobs
 * are never deleted.
 */
import { readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { deleteBefore } from '@gatehouse/kit/db/batched-delete.ts'
import type { AppContext } from '../context.ts'

export interface MaintenanceResult {
  uploads: number
  files: number
  sessions: number
  oidcStates: number
  auditEvents: number
}

export async function runMaintenance(ctx: AppContext): Promise<MaintenanceResult> {
  const now = ctx.clock.now()
  // Staged files of expired sessions go in the sweep below (their owner is no longer live).
  // Committed sessions are kept until they expire too: their row proves the token was used.
  // Each delete reads first (kit `deleteBefore`), so a run with nothing due writes nothing: a
  // database turned read-only (a standby after a failover) refuses even a delete of no row.
  const uploads = await deleteBefore(ctx.database.db, 'uploads', 'expires_at', now + 1)
  const live = new Set(
    (await ctx.database.db.selectFrom('uploads').select('id').where('state', '!=', 'committed').execute()).map(
      (u) => u.id,
    ),
  )
  let files = 0
  // Anything in staging without a live session, and leftovers of interrupted work older than an upload lifetime.
  for (const dir of [ctx.stagingDir, ctx.tmpDir]) {
    let names: string[] = []
    try {
      names = await readdir(dir)
    } catch {
      continue
    }
    for (const name of names) {
      const path = join(dir, name)
      const owner = dir === ctx.stagingDir ? name.split('.')[0]! : undefined
      const info = await stat(path).catch(() => undefined)
      if (!info) continue
      const old = now - info.mtimeMs > ctx.config.uploadTtl
      const orphan = owner !== undefined && !live.has(owner) && !name.includes('.part-')
      if (orphan || old) {
        await rm(path, { recursive: true, force: true })
        files++
      }
    }
  }
  const sessions = await deleteBefore(ctx.database.db, 'sessions', 'expires_at', now + 1)
  const oidcStates = await deleteBefore(ctx.database.db, 'oidc_states', 'expires_at', now + 1)
  // In batches: a first pass over a year of history would otherwise hold the write lock throughout.
  const audit = await deleteBefore(ctx.database.db, 'audit_events', 'at', now - ctx.config.auditRetention)
  const result = { uploads, files, sessions, oidcStates, auditEvents: audit }
  for (const [kind, n] of Object.entries(result)) ctx.counters.maintenanceRemoved.inc({ kind }, n)
  ctx.logger.info({ maintenance: result }, 'maintenance done')
  return result
}
