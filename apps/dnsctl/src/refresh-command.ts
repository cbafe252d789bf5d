/**
 * `dnsctl refresh blocklists|zones [--json] [config flags]`: run a refresh job now and print
 * what happened. Blocklists: exit 0 when every source and resolver succeeded, 1 otherwise (the
 * list is still compiled from the sources that worked and the last good copies). Zones: exit 0
 * when every zone transferred and no record differs. A function of its own so the CLI shell
 * can mount it as a command.
 */
import { refreshOptions } from './blocklists/job.ts'
import { refreshBlocklists } from './blocklists/refresh.ts'
import { type Config, loadDnsctlConfig } from './config.ts'
import { transferOptions } from './transfer/job.ts'
import { refreshTransfers } from './transfer/refresh.ts'

const USAGE = `usage: dnsctl refresh blocklists|zones [--json] [--config FILE] [flags]

blocklists  download the configured blocklist sources now, compile the RPZ file and reload
            the resolvers one after the other
zones       refresh the secondary zones from their primary, record the earliest RRSIG expiry
            and compare primary and secondary record by record

Exit status 0 on success, 1 when a source, resolver or zone failed (or zones differ).
`

/** Returns the process exit code. */
export async function refreshCommand(argv: string[], out = process.stdout, err = process.stderr): Promise<number> {
  const known = argv[0] === 'blocklists' || argv[0] === 'zones'
  if (!known || argv.includes('--help') || argv.includes('-h')) {
    ;(known ? out : err).write(USAGE)
    return known ? 0 : 2
  }
  const json = argv.includes('--json')
  const config = loadDnsctlConfig(argv.slice(1).filter((a) => a !== '--json'))
  if (argv[0] === 'zones') return zonesCommand(config, json, out, err)
  const report = await refreshBlocklists(refreshOptions(config))
  if (json) {
    out.write(`${JSON.stringify(report, null, 2)}\n`)
  } else {
    for (const s of report.sources) {
      const what = s.ok ? `${s.domains} domains (${s.origin.replace(/_/g, ' ')})` : `FAILED: ${s.error}`
      out.write(
        `${s.url}\n  ${what}${!s.ok && s.origin === 'last_good_copy' ? `; using the last good copy (${s.domains} domains)` : ''}\n`,
      )
    }
    out.write(
      `${report.ok ? 'ok' : 'failed'}: ${report.domain_count} blocked domains, ${report.passthru_count} allowed exceptions, ${report.duration_ms} ms\n`,
    )
    if (!report.ok) err.write(`dnsctl: blocklist refresh failed: ${report.error}\n`)
  }
  return report.ok ? 0 : 1
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
