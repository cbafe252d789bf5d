/**
 * The hourly zone-transfer job (and `dnsctl refresh zones`): for every zone this server is
 * secondary for, ask knotd to refresh it from its primary (`knotc -b zone-refresh`), transfer
 * both copies (primary and local knotd), record the earliest RRSIG expiry of the transferred
 * data, and compare the two record by record. Writes `zone-transfer.json` and, when every
 * zone could be compared, `differential-check.json` (a check that could not run is not a
 * clean check: the old file then ages into unhealthy).
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from '../files/atomic.ts'
import { readResult } from '../health/results.ts'
import type { Address } from '../knot/dns.ts'
import type { Knotc } from '../knot/knotc.ts'
import { axfr } from './axfr.ts'
import { compareZones, earliestRrsigExpiry } from './compare.ts'

export interface TransferOptions {
  zones: readonly string[]
  primary: Address
  local: Address
  knotc: Knotc
  resultsDir: string
  timeoutMs: number
  now?: () => Date
}

export interface ZoneTransferOutcome {
  zone: string
  ok: boolean
  error: string | null
  serial: number | null
  primary_serial: number | null
  earliest_rrsig_expiry: string | null
  mismatches: number | null
  /** Up to ten records per side present on that side only, prefixed `primary:` or `secondary:`. */
  differences: string[]
}

const DNSSEC = / (RRSIG|NSEC|NSEC3|NSEC3PARAM|DNSKEY|CDS|CDNSKEY) /

/** Ten differences of one side, data records before DNSSEC ones (what an operator looks at first). */
function sample(records: string[]): string[] {
  return [...records].sort((a, b) => Number(DNSSEC.test(a)) - Number(DNSSEC.test(b)) || (a < b ? -1 : 1)).slice(0, 10)
}

export async function refreshTransfers(o: TransferOptions) {
  const now = o.now ?? (() => new Date())
  await mkdir(o.resultsDir, { recursive: true })
  const outcomes: ZoneTransferOutcome[] = []
  for (const zone of o.zones) {
    const out: ZoneTransferOutcome = {
      zone,
      ok: false,
      error: null,
      serial: null,
      primary_serial: null,
      earliest_rrsig_expiry: null,
      mismatches: null,
      differences: [],
    }
    try {
      await o.knotc.run('-b', 'zone-refresh', zone)
      const [primary, local] = await Promise.all([axfr(o.primary, zone, o.timeoutMs), axfr(o.local, zone, o.timeoutMs)])
      const cmp = compareZones(primary, local)
      out.serial = cmp.secondarySerial ?? null
      out.primary_serial = cmp.primarySerial ?? null
      out.earliest_rrsig_expiry = earliestRrsigExpiry(local)?.toISOString() ?? null
      out.mismatches = cmp.mismatches
      out.differences = [
        ...sample(cmp.onlyPrimary).map((r) => `primary: ${r}`),
        ...sample(cmp.onlySecondary).map((r) => `secondary: ${r}`),
      ]
      out.ok = true
    } catch (err) {
      out.error = (err as Error).message
    }
    outcomes.push(out)
  }
  const finished = now().toISOString()
  const failed = outcomes.filter((x) => !x.ok)
  const ok = failed.length === 0
  const previous = await readResult(o.resultsDir, 'zone-transfer.json')
  const expiries = outcomes.flatMap((x) => (x.earliest_rrsig_expiry ? [x.earliest_rrsig_expiry] : [])).sort()
  const result = {
    finished_at: finished,
    ok,
    error: ok ? null : failed.map((x) => `${x.zone}: ${x.error}`).join('; '),
    last_success_at: ok ? finished : previous.state === 'ok' ? previous.value.last_success_at : null,
    earliest_rrsig_expiry: expiries[0] ?? null,
    zones: outcomes,
  }
  await writeFileAtomic(join(o.resultsDir, 'zone-transfer.json'), `${JSON.stringify(result, null, 2)}\n`)
  let differential: { checked_at: string; mismatches: number } | null = null
  if (ok) {
    differential = {
      checked_at: finished,
      mismatches: outcomes.reduce((n, x) => n + (x.mismatches ?? 0), 0),
    }
    const detail = {
      ...differential,
      zones: outcomes.map(({ zone, serial, primary_serial, mismatches, differences }) => ({
        zone,
        serial,
        primary_serial,
        mismatches,
        differences,
      })),
    }
    await writeFileAtomic(join(o.resultsDir, 'differential-check.json'), `${JSON.stringify(detail, null, 2)}\n`)
  }
  return { ...result, differential }
}
