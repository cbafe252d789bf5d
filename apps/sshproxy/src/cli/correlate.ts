/** `correlate --log FILE --window 5m FP`: sshd log lines that belong to a fingerprint. */
import { access, constants } from 'node:fs/promises'
import { parseDuration } from '@gatehouse/kit/durations.ts'
import { escapeTerminal } from '@gatehouse/kit/terminal.ts'
import { correlate } from '../correlate/service.ts'
import { errors } from '../errors.ts'
import { getEntry } from '../fingerprints/store.ts'
import { readStore } from './entries.ts'
import type { Io } from './io.ts'
import { checkFingerprint } from './validate.ts'

export async function correlateCommand(
  dbPath: string,
  options: { log: string; window: string },
  fingerprint: string,
  io: Io,
) {
  const fp = checkFingerprint(fingerprint)
  let windowMs: number
  try {
    windowMs = parseDuration(options.window)
  } catch (err) {
    throw errors.invalid_window((err as Error).message)
  }
  try {
    await access(options.log, constants.R_OK)
  } catch (err) {
    throw errors.log_unreadable(options.log, (err as NodeJS.ErrnoException).code ?? 'error')
  }
  const entry = await readStore(dbPath, (s) => getEntry(s.db, fp))
  if (!entry) throw errors.fingerprint_not_found(fp)
  const { lines, matches } = await correlate(entry, options.log, windowMs, (m) => {
    const why =
      m.kind === 'client_ip'
        ? `client ${m.ip}`
        : `gate port ${m.relayPort} = client ${m.client.ip} port ${m.client.port}`
    // Log lines carry what clients sent (user names, versions): escaped before printing.
    io.out(`[${why}] ${escapeTerminal(m.line)}\n`)
  })
  io.err(
    `${matches} of ${lines} lines match ${fp} (${entry.ips.length} source IPs, window ${options.window} around ${entry.first_seen} .. ${entry.last_seen})\n`,
  )
}
