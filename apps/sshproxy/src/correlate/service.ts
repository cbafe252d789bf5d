/**
 * `correlate`: which sshd log lines belong to a fingerprint. A line matches when it falls
 * within the window around the fingerprint's first/last seen times and either names one of
 * its source IPs exactly, or names the gate-side port of one of its relayed connections
 * (behind the gate sshd logs `from <gate address> port <relay port>`) within the window of
 * that sighting.
 */
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import { normalizeIp } from '@gatehouse/kit/net.ts'
import type { FingerprintEntry } from '../fingerprints/store.ts'
import { parseLogLine } from './log-lines.ts'

export type Match =
  | { kind: 'client_ip'; line: string; ip: string }
  | { kind: 'relay_port'; line: string; relayPort: number; client: { ip: string; port: number } }

export async function correlate(
  entry: Pick<FingerprintEntry, 'first_seen' | 'last_seen' | 'ips' | 'sightings'>,
  logPath: string,
  windowMs: number,
  onMatch: (m: Match) => void,
): Promise<{ lines: number; matches: number }> {
  const from = Date.parse(entry.first_seen) - windowMs
  const to = Date.parse(entry.last_seen) + windowMs
  const reference = Date.parse(entry.last_seen)
  const ips = new Set(entry.ips.flatMap((ip) => safeNormalize(ip)))
  const relays = new Map<number, { time: number; gate: string[]; ip: string; port: number }[]>()
  for (const s of entry.sightings) {
    if (s.relay_port === undefined) continue
    const list = relays.get(s.relay_port) ?? []
    const gate = s.relay_ip === undefined ? [] : safeNormalize(s.relay_ip)
    list.push({ time: Date.parse(s.last_seen), gate, ip: s.ip, port: s.port })
    relays.set(s.relay_port, list)
  }
  const input = createReadStream(logPath)
  const rl = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })
  let lines = 0
  let matches = 0
  try {
    for await (const text of rl) {
      lines++
      const parsed = parseLogLine(text, reference)
      if (!parsed || parsed.time < from || parsed.time > to) continue
      const relay = relays
        .get(parsed.port)
        ?.find((r) => Math.abs(r.time - parsed.time) <= windowMs && (r.gate.length === 0 || r.gate[0] === parsed.ip))
      if (relay) {
        matches++
        onMatch({ kind: 'relay_port', line: text, relayPort: parsed.port, client: { ip: relay.ip, port: relay.port } })
      } else if (ips.has(parsed.ip)) {
        matches++
        onMatch({ kind: 'client_ip', line: text, ip: parsed.ip })
      }
    }
  } finally {
    rl.close()
    input.destroy()
  }
  return { lines, matches }
}

function safeNormalize(ip: string): string[] {
  try {
    return [normalizeIp(ip)]
  } catch {
    return []
  }
}
