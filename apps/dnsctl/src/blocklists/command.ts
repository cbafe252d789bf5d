/**
 * `dnsctl refresh blocklists [--json] [config flags]`: run the refresh job now, print a
 * per-source summary, exit 0 when every source and resolver succeeded, 1 otherwise
 * (the list is still compiled from the sources that worked and the last good copies).
 */
import { loadDnsctlConfig } from '../config.ts'
import { refreshOptions } from './job.ts'
import { refreshBlocklists } from './refresh.ts'

const USAGE = `usage: dnsctl refresh blocklists [--json] [--config FILE] [flags]

Download the configured blocklist sources now, compile the RPZ file and reload the
resolvers one after the other. Exit status 0 on success, 1 when a source or resolver failed.
`

/** Returns the process exit code. */
export async function refreshCommand(argv: string[], out = process.stdout, err = process.stderr): Promise<number> {
  if (argv[0] !== 'blocklists' || argv.includes('--help') || argv.includes('-h')) {
    ;(argv[0] === 'blocklists' ? out : err).write(USAGE)
    return argv[0] === 'blocklists' ? 0 : 2
  }
  const json = argv.includes('--json')
  const config = loadDnsctlConfig(argv.slice(1).filter((a) => a !== '--json'))
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
