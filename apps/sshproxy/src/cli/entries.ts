/**
 * The store commands: list, approve, block, pending, label, delete. Each opens the SQLite
 * file `serve` uses; `serve` reads the verdict per connection, so changes apply at once.
 */
import { gateEntryCommands, printGateList } from '@gatehouse/kit/cli/gate-entries.ts'
import { escapeTerminal } from '@gatehouse/kit/terminal.ts'
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
  printGateList(
    entries,
    {
      json: (e, verbose) => ({
        enrolled_count: e.enrolled_count,
        ...(verbose
          ? {
              identification: e.identification,
              client_version: e.client_version,
              material: materialOf(e) ?? null,
              metadata: e.metadata,
            }
          : {}),
      }),
      columns: [],
      verboseLines: (e) => [
        `client: ${escapeTerminal(e.identification || '-')} (version ${escapeTerminal(e.client_version || '-')})`,
        `first seen: ${e.first_seen}  enrolled connections: ${e.enrolled_count}  actor: ${escapeTerminal(e.actor ?? '-')}`,
        `material: ${escapeTerminal(materialOf(e) ?? '(not stored)')}`,
      ],
    },
    options,
    io,
  )
}
