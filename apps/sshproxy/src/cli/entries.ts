/**
 * The store commands: list, approve, block, pending, label, delete. Each opens the SQLite
 * file `serve` uses; `serve` reads the verdict per connection, so changes apply at once.
 */
import { userInfo } from 'node:os'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { openStore, type Store } from '../db/index.ts'
import type { Verdict } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { deleteEntry, type FingerprintEntry, listEntries, setLabel, setVerdict } from '../fingerprints/store.ts'
import { FINGERPRINT_FIELDS, fingerprintMaterial } from '../wire/fingerprint.ts'
import type { Io } from './io.ts'
import { checkFingerprint, checkLabel } from './validate.ts'

export async function withStore<T>(dbPath: string, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(dbPath, { create: false })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

function actor(): string {
  try {
    return `cli:${userInfo().username}`
  } catch {
    return 'cli'
  }
}

export function verdictText(e: Pick<FingerprintEntry, 'verdict' | 'decided_at'>): string {
  return e.decided_at === null ? 'new' : e.verdict
}

/** The joined fingerprint material, or undefined when metadata was trimmed. */
export function materialOf(e: FingerprintEntry): string | undefined {
  const m = e.metadata
  const ok = FINGERPRINT_FIELDS.every((f) =>
    f === 'first_kex_packet_follows' ? typeof m[f] === 'boolean' : typeof m[f] === 'string',
  )
  return ok ? fingerprintMaterial(m as never) : undefined
}

export async function listCommand(dbPath: string, options: { verbose: boolean; json: boolean }, io: Io) {
  const entries = await withStore(dbPath, (s) => listEntries(s.db))
  if (options.json) {
    const out = entries.map((e) => ({
      fingerprint: e.fingerprint,
      verdict: e.verdict,
      decided: e.decided_at !== null,
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
  const rows = entries.map((e) => [
    e.fingerprint,
    verdictText(e),
    String(e.count),
    e.last_seen,
    e.ips.slice(0, 3).join(',') + (e.ips.length > 3 ? `,+${e.ips.length - 3}` : ''),
    escapeTerminal(e.label),
  ])
  const head = ['FINGERPRINT', 'VERDICT', 'COUNT', 'LAST SEEN', 'IPS', 'LABEL']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) =>
    `${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}`.trimEnd()
  const out = [line(head)]
  for (const [i, e] of entries.entries()) {
    out.push(line(rows[i]!))
    if (options.verbose) {
      out.push(
        `    client: ${escapeTerminal(e.identification || '-')} (version ${escapeTerminal(e.client_version || '-')})`,
      )
      out.push(
        `    first seen: ${e.first_seen}  enrolled connections: ${e.enrolled_count}  actor: ${escapeTerminal(e.actor ?? '-')}`,
      )
      out.push(`    material: ${escapeTerminal(materialOf(e) ?? '(not stored)')}`)
    }
  }
  io.out(`${out.join('\n')}\n`)
}

export async function verdictCommand(
  dbPath: string,
  verdict: Verdict,
  fingerprint: string,
  label: string | undefined,
  io: Io,
) {
  const fp = checkFingerprint(fingerprint)
  const checkedLabel = label === undefined ? undefined : checkLabel(label)
  const now = new Date().toISOString()
  const ok = await withStore(dbPath, (s) => setVerdict(s.db, fp, { verdict, actor: actor(), label: checkedLabel, now }))
  if (!ok) throw errors.fingerprint_not_found(fp)
  io.out(`${fp} ${verdict}${checkedLabel === undefined ? '' : ` (label ${JSON.stringify(checkedLabel)})`}\n`)
}

export async function labelCommand(dbPath: string, fingerprint: string, label: string, io: Io) {
  const fp = checkFingerprint(fingerprint)
  const checked = checkLabel(label)
  const ok = await withStore(dbPath, (s) => setLabel(s.db, fp, checked, new Date().toISOString()))
  if (!ok) throw errors.fingerprint_not_found(fp)
  io.out(`${fp} label ${JSON.stringify(checked)}\n`)
}

export async function deleteCommand(dbPath: string, fingerprint: string, io: Io) {
  const fp = checkFingerprint(fingerprint)
  const ok = await withStore(dbPath, (s) => deleteEntry(s.db, fp))
  if (!ok) throw errors.fingerprint_not_found(fp)
  io.out(`${fp} deleted\n`)
}
