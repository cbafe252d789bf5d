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
import type { Io } from './io.ts'
import { checkFingerprint, checkLabel } from './validate.ts'

async function withStore<T>(dbPath: string, fn: (store: Store) => Promise<T>): Promise<T> {
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

/** `new` until someone decided; an automated block past its expiry reads `pending (expired block)`. */
export function verdictText(e: Pick<FingerprintEntry, 'verdict' | 'decided_at' | 'expires_at'>, now = Date.now()) {
  if (e.decided_at === null) return 'new'
  if (e.expires_at !== null && Date.parse(e.expires_at) <= now) return 'pending (expired block)'
  return e.expires_at !== null ? `${e.verdict} until ${e.expires_at}` : e.verdict
}

export async function listCommand(dbPath: string, options: { verbose: boolean; json: boolean }, io: Io) {
  const entries = await withStore(dbPath, (s) => listEntries(s.db))
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
  const rows = entries.map((e) => [
    e.fingerprint,
    verdictText(e),
    String(e.count),
    e.last_seen,
    escapeTerminal(e.metadata.sni || '-'),
    e.ips.slice(0, 3).join(',') + (e.ips.length > 3 ? `,+${e.ips.length - 3}` : ''),
    escapeTerminal(e.label),
  ])
  const head = ['FINGERPRINT', 'VERDICT', 'COUNT', 'LAST SEEN', 'SNI', 'IPS', 'LABEL']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) =>
    `${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}`.trimEnd()
  const out = [line(head)]
  for (const [i, e] of entries.entries()) {
    out.push(line(rows[i]!))
    if (options.verbose) {
      out.push(
        `    ja3: ${escapeTerminal(e.metadata.ja3 || '-')}  refused: ${e.refused_count}  actor: ${escapeTerminal(e.actor ?? '-')}`,
      )
      out.push(`    ja4_r: ${escapeTerminal(e.metadata.ja4_r || '(not stored)')}`)
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
