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
import { FINGERPRINT_FIELDS, fingerprintMaterial } from '../wire/fingerprint-material.ts'
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

/** The joined fingerprint material, or undefined when metadata was trimmed. */
export function materialOf(e: FingerprintEntry): string | undefined {
  const m = e.metadata
  const ok = FINGERPRINT_FIELDS.every((f) =>
    f === 'first_kex_packet_follows' ? typeof m[f] === 'boolean' : typeof m[f] === 'string',
  )
  return ok ? fingerprintMaterial(m as never) : undefined
}

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
      enrolled_count: e.enrolled_count,
      first_seen: e.first_seen,
      last_seen: e.last_seen,
      ips: e.ips,
      ports: e.ports,
      sightings: e.sightings,
      ...(options.verbose
        ? {
            identification: e.identification,
            client_version: e.client_version,
            material: materialOf(e) ?? null,
            metadata: e.metadata,
          }
        : {}),
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
    { header: 'IPS', value: (e) => e.ips.slice(0, 3).join(',') + (e.ips.length > 3 ? `,+${e.ips.length - 3}` : '') },
    { header: 'LABEL', value: (e) => e.label },
  ]
  const lines = formatTable(columns, entries).trimEnd().split('\n')
  if (!options.verbose) {
    io.out(`${lines.join('\n')}\n`)
    return
  }
  // -v: three indented lines under each row (the table's cells are escaped by formatTable).
  const out = [lines[0]!]
  for (const [i, e] of entries.entries()) {
    out.push(lines[i + 1]!)
    out.push(
      `    client: ${escapeTerminal(e.identification || '-')} (version ${escapeTerminal(e.client_version || '-')})`,
    )
    out.push(
      `    first seen: ${e.first_seen}  enrolled connections: ${e.enrolled_count}  actor: ${escapeTerminal(e.actor ?? '-')}`,
    )
    out.push(`    material: ${escapeTerminal(materialOf(e) ?? '(not stored)')}`)
  }
  io.out(`${out.join('\n')}\n`)
}
