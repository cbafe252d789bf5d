/** `dnsctl ha status` and `dnsctl ha promote`: the CLI over the HA endpoints. */
import { paint, printList } from '@gatehouse/kit/cli/output.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import type { HaStatus, PromoteResultBody } from '../ha/status.ts'
import { apiOf } from './client.ts'

type Opts = Record<string, unknown>
const out = (text: string) => void process.stdout.write(text)

function yesNo(v: boolean | null | undefined): string {
  return v === true ? 'yes' : v === false ? 'no' : 'unknown'
}

export async function haStatus(o: Opts): Promise<void> {
  const { body } = await apiOf(o).json<HaStatus>('GET', '/v1/status/ha')
  if (o.json === true) return out(`${terminalJson(body, 2)}\n`)
  const mode = body.write_mode === 'read-write' ? paint('green', body.write_mode) : paint('yellow', body.write_mode)
  out(`role: ${body.role} (epoch ${body.epoch}), ${mode}\n`)
  if (body.read_only_reason) out(`  ${escapeTerminal(body.read_only_reason)}\n`)
  if (body.vip.address) out(`vip: ${body.vip.address} held here: ${yesNo(body.vip.owned)}\n`)
  out(
    `replication: ${body.replication.state}, ${body.replication.zones_in_sync}/${body.replication.zones.length} zones in sync\n`,
  )
  if (body.replication.error) out(paint('red', `  ${escapeTerminal(body.replication.error)}\n`))
  const peer = body.peer
  if (peer) {
    const st = peer.status
    out(
      peer.reachable
        ? `peer ${escapeTerminal(peer.api ?? '')}: ${st?.role ?? '?'} ${st?.write_mode ?? '?'}, vip held: ${yesNo(st?.vip.owned)}, ${peer.latency_ms} ms\n`
        : paint('red', `peer ${escapeTerminal(peer.api ?? '')}: unreachable (${escapeTerminal(peer.error ?? '')})\n`),
    )
  }
  if (body.replication.zones.length > 0) {
    printList(
      body.replication.zones,
      [
        { header: 'ZONE', value: (z) => z.zone },
        { header: 'PRIMARY', value: (z) => z.primary_serial ?? '-' },
        { header: 'SECONDARY', value: (z) => z.secondary_serial ?? '-' },
        { header: 'LAG', value: (z) => (z.lag_seconds === null ? '-' : `${z.lag_seconds}s`) },
      ],
      { json: false },
    )
  }
}

export async function haPromote(o: Opts): Promise<void> {
  const reason = typeof o.reason === 'string' ? o.reason : undefined
  const { body } = await apiOf(o).json<PromoteResultBody>('POST', '/v1/ha/promote', {
    body: reason === undefined ? {} : { reason },
  })
  if (o.json === true) return out(`${terminalJson(body, 2)}\n`)
  out(`promoted to primary (epoch ${body.epoch}); ${body.zones.length} zones taken over\n`)
  for (const z of body.zones) out(`  ${escapeTerminal(z.zone)} serial ${z.serial}\n`)
  for (const w of body.warnings) out(`${paint('yellow', `warning: ${escapeTerminal(w)}`)}\n`)
}

export async function haDemote(o: Opts): Promise<void> {
  const reason = typeof o.reason === 'string' ? o.reason : undefined
  const { body } = await apiOf(o).json<{ role: string; epoch: number; zones: string[] }>('POST', '/v1/ha/demote', {
    body: reason === undefined ? {} : { reason },
  })
  if (o.json === true) return out(`${terminalJson(body, 2)}\n`)
  out(`demoted to secondary (epoch ${body.epoch}); ${body.zones.length} zones now replicate from the peer\n`)
}
