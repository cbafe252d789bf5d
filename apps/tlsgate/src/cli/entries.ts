/**
 * The store commands: list, approve, block, pending, label, delete. Each opens the SQLite
 * file `serve` uses; `serve` reads the verdict per connection, so changes apply at once.
 */
import { gateEntryCommands } from '@gatehouse/kit/cli/gate-entries.ts'
import { type Column, formatTable } from '@gatehouse/kit/cli/output.ts'
import { gateStatusOf, verdictText } from '@gatehouse/kit/gate-verdict.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { openStore } from '../db/index.ts'
import { errors } from '../errors.ts'
import { type FingerprintEntry, listEntries, setVerdict } from '../fingerprints/store.ts'
import type { Io } from './io.ts'
import { checkFingerprint, checkLabel } from './validate.ts'

const commands = gateEntryCommands({
  open: (path, readsOnly) => openStore(path, { create: false, readsOnly }),
  checkFingerprint,
  checkLabel,
  notFound: (fp) => errors.fingerprint_not_found(fp),
  setVerdict,
})

export const { readStore, verdictCommand, labelCommand, deleteCommand, backupCommand } = commands

export async function listCommand(dbPath: string, options: { verbose: boolean; json: boolean }, io: Io) {
  const entries = await readStore(dbPath, (s) => listEntries(s.db))
  if (options.json) {
    const out = entries.map((e) => ({
      fingerprint: e.fingerprint,
      verdict: e.verdict,
      decided: e.decided_at !== null,
      expires_at: e.expires_at,
      label: e.label,
      count: e.count,
      refused_count: e.refused_count,
      first_seen: e.first_seen,
      last_seen: e.last_seen,
      sni: e.metadata.sni ?? '',
      ja3: e.metadata.ja3 ?? '',
      ips: e.ips,
      ports: e.ports,
      sightings: e.sightings,
      ...(options.verbose ? { ja4_r: e.metadata.ja4_r ?? '', actor: e.actor } : {}),
    }))
    io.out(`${terminalJson(out, 2)}\n`)
    return
  }
  if (entries.length === 0) {
    io.out('no fingerprints stored yet\n')
    return
  }
  const columns: Column<FingerprintEntry>[] = [
    { header: 'FINGERPRINT', value: (e) => e.fingerprint },
    {
      header: 'VERDICT',
      value: (e) => verdictText(e),
      style: (e) => (gateStatusOf(e, Date.now()) === 'blocked' ? 'red' : undefined),
    },
    { header: 'COUNT', value: (e) => e.count },
    { header: 'LAST SEEN', value: (e) => e.last_seen },
    { header: 'SNI', value: (e) => e.metadata.sni },
    { header: 'IPS', value: (e) => e.ips.slice(0, 3).join(',') + (e.ips.length > 3 ? `,+${e.ips.length - 3}` : '') },
    { header: 'LABEL', value: (e) => e.label },
  ]
  const lines = formatTable(columns, entries).trimEnd().split('\n')
  if (!options.verbose) {
    io.out(`${lines.join('\n')}\n`)
    return
  }
  // -v: two indented lines under each row (the table's cells are escaped by formatTable).
  const out = [lines[0]!]
  for (const [i, e] of entries.entries()) {
    out.push(lines[i + 1]!)
    out.push(
      `    ja3: ${escapeTerminal(e.metadata.ja3 || '-')}  refused: ${e.refused_count}  actor: ${escapeTerminal(e.actor ?? '-')}`,
    )
    out.push(`    ja4_r: ${escapeTerminal(e.metadata.ja4_r || '(not stored)')}`)
  }
  io.out(`${out.join('\n')}\n`)
}
