/**
 * Refresh health (spec Part A "States and transitions"): false when a job failed, zone data
 * is more than 2 h old, blocklist data more than 26 h old, the earliest transferred RRSIG
 * expires within 12 h, or the latest differential check mismatches or is more than 2 h old.
 * A missing or unreadable result counts as unhealthy: health is never assumed.
 */
import {
  type BlocklistRefreshResult,
  type DifferentialCheckResult,
  type Read,
  readResult,
  type ZoneTransferResult,
} from './results.ts'

const HOUR = 3600_000
export const LIMITS = {
  zoneDataMaxAgeMs: 2 * HOUR,
  blocklistDataMaxAgeMs: 26 * HOUR,
  rrsigMinRemainingMs: 12 * HOUR,
  differentialMaxAgeMs: 2 * HOUR,
}

export interface RefreshStatus {
  healthy: boolean
  checked_at: string
  problems: string[]
  zone_transfer: ZoneTransferResult | null
  blocklist_refresh: BlocklistRefreshResult | null
  differential_check: DifferentialCheckResult | null
}

function age(now: number, time: string | null): number {
  return time === null ? Number.POSITIVE_INFINITY : now - Date.parse(time)
}

function value<T>(read: Read<T>, what: string, problems: string[]): T | null {
  if (read.state === 'missing') {
    problems.push(`no ${what} result yet`)
    return null
  }
  if (read.state === 'invalid') {
    problems.push(`the ${what} result file is invalid: ${read.error}`)
    return null
  }
  return read.value
}

export class HealthService {
  readonly dir: string
  readonly now: () => Date
  constructor(dir: string, now: () => Date) {
    this.dir = dir
    this.now = now
  }

  async status(): Promise<RefreshStatus> {
    const now = this.now().getTime()
    const problems: string[] = []
    const zt = value(await readResult(this.dir, 'zone-transfer.json'), 'zone-transfer', problems)
    const bl = value(await readResult(this.dir, 'blocklist-refresh.json'), 'blocklist refresh', problems)
    const dc = value(await readResult(this.dir, 'differential-check.json'), 'differential check', problems)
    if (zt) {
      if (!zt.ok) problems.push(`the last zone transfer failed${zt.error ? `: ${zt.error}` : ''}`)
      if (age(now, zt.last_success_at) > LIMITS.zoneDataMaxAgeMs) {
        problems.push('zone data is more than 2 hours old')
      }
      if (
        zt.earliest_rrsig_expiry !== null &&
        Date.parse(zt.earliest_rrsig_expiry) - now < LIMITS.rrsigMinRemainingMs
      ) {
        problems.push(`the earliest transferred DNSSEC signature expires within 12 hours (${zt.earliest_rrsig_expiry})`)
      }
    }
    if (bl) {
      if (!bl.ok) problems.push(`the last blocklist refresh failed${bl.error ? `: ${bl.error}` : ''}`)
      if (age(now, bl.last_success_at) > LIMITS.blocklistDataMaxAgeMs) {
        problems.push('blocklist data is more than 26 hours old')
      }
    }
    if (dc) {
      if (dc.mismatches > 0) problems.push(`the primary-versus-secondary check found ${dc.mismatches} mismatches`)
      if (age(now, dc.checked_at) > LIMITS.differentialMaxAgeMs) {
        problems.push('the primary-versus-secondary check is more than 2 hours old')
      }
    }
    return {
      healthy: problems.length === 0,
      checked_at: new Date(now).toISOString(),
      problems,
      zone_transfer: zt,
      blocklist_refresh: bl,
      differential_check: dc,
    }
  }
}
