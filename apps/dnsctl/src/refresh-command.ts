/**
 * `dnsctl refresh blocklists|zones [--json] [config flags]`: run a refresh job now and print
 * what happened. Blocklists: exit 0 when every source and resolver succeeded, 1 otherwise (the
 * list is still compiled from the sources that worked and the last good copies). Zones: exit 0
 * when every zone transferred and no record differs. Mounted as commands by cli/program.ts.
 */

import { escapeTerminal } from '@gatehouse/kit/terminal.ts'
import { refreshOptions } from './blocklists/job.ts'
import { refreshBlocklists } from './blocklists/refresh.ts'
import type { Config } from './config.ts'
import { transferOptions } from './transfer/job.ts'
import { refreshTransfers } from './transfer/refresh.ts'

/** `1 blocked domain`, `2 blocked domains`. */
function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}

/** `dnsctl refresh blocklists`: returns the process exit code. */
export async function refreshBlocklistsCommand(
  config: Config,
  json: boolean,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  const report = await refreshBlocklists(refreshOptions(config))
  if (json) {
    out.write(`${JSON.stringify(report, null, 2)}\n`)
  } else {
    for (const s of report.sources) {
      const what = s.ok
        ? `${counted(s.domains, 'domain')} (${s.origin.replace(/_/g, ' ')})`
        : `FAILED: ${escapeTerminal(s.error ?? '')}`
      out.write(
        `${escapeTerminal(s.url)}\n  ${what}${!s.ok && s.origin === 'last_good_copy' ? `; using the last good copy (${counted(s.domains, 'domain')})` : ''}\n`,
      )
    }
    out.write(
      `${report.ok ? 'ok' : 'failed'}: ${counted(report.domain_count, 'blocked domain')}, ${counted(report.passthru_count, 'allowed exception')}, ${report.duration_ms} ms\n`,
    )
    if (!report.ok) err.write(`dnsctl: blocklist refresh failed: ${escapeTerminal(report.error ?? '')}\n`)
  }
  return report.ok ? 0 : 1
}

/** `dnsctl refresh zones`: returns the process exit code. */
export async function refreshZonesCommand(
  config: Config,
  json: boolean,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  return zonesCommand(config, json, out, err)
}

async function zonesCommand(config: Config, json: boolean, out: NodeJS.WritableStream, err: NodeJS.WritableStream) {
  const options = transferOptions(config)
  if (!options) {
    err.write('dnsctl: no transfer zones configured (--transfer-zone and --transfer-primary)\n')
    return 2
  }
  const result = await refreshTransfers(options)
  if (json) out.write(`${JSON.stringify(result, null, 2)}\n`)
  else {
    for (const z of result.zones) {
      out.write(
        z.ok
          ? `${z.zone}: serial ${z.serial} (primary ${z.primary_serial}), ${z.mismatches} mismatches, earliest RRSIG expiry ${z.earliest_rrsig_expiry ?? 'none'}\n`
          : `${z.zone}: FAILED: ${z.error}\n`,
      )
    }
  }
  if (!result.ok) err.write(`dnsctl: zone-transfer refresh failed: ${result.error}\n`)
  return result.ok && result.differential?.mismatches === 0 ? 0 : 1
}
