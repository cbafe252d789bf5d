/**
 * The store commands: list, approve, block, pending, label, delete. Each opens the SQLite
 * file `serve` uses; `serve` reads the verdict per connection, so changes apply at once.
 */
import { gateEntryCommands, printGateList } from '@gatehouse/kit/cli/gate-entries.ts'
import { escapeTerminal } from '@gatehouse/kit/terminal.ts'
import { openStore } from '../db/index.ts'
import { errors } from '../errors.ts'
import { listEntries, setVerdict } from '../fingerprints/store.ts'
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
  printGateList(
    entries,
    {
      json: (e, verbose) => ({
        refused_count: e.refused_count,
        sni: e.metadata.sni ?? '',
        ja3: e.metadata.ja3 ?? '',
        ...(verbose ? { ja4_r: e.metadata.ja4_r ?? '', actor: e.actor } : {}),
      }),
      columns: [{ header: 'SNI', value: (e) => e.metadata.sni }],
      verboseLines: (e) => [
        `ja3: ${escapeTerminal(e.metadata.ja3 || '-')}  refused: ${e.refused_count}  actor: ${escapeTerminal(e.actor ?? '-')}`,
        `ja4_r: ${escapeTerminal(e.metadata.ja4_r || '(not stored)')}`,
      ],
    },
    options,
    io,
  )
}
