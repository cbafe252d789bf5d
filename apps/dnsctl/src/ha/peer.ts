/**
 * The peer's own HA status, fetched from its read-only metrics listener with a short deadline
 * (`include_peer=false`, so two peers never ask each other in a loop).
 */
import { requestNoRedirect } from '@gatehouse/kit/http-client.ts'
import type { ListenAddress } from '@gatehouse/kit/net.ts'
import type { LocalHaStatus } from './status.ts'

export interface PeerCheck {
  reachable: boolean
  latency_ms: number | null
  checked_at: string
  error: string | null
  status: LocalHaStatus | null
}

function url(peer: ListenAddress): string {
  const host = peer.host.includes(':') ? `[${peer.host}]` : peer.host
  return `http://${host}:${peer.port}/v1/status/ha?include_peer=false`
}

export async function checkPeer(peer: ListenAddress, timeoutMs: number, now: () => Date): Promise<PeerCheck> {
  const started = performance.now()
  const checked_at = now().toISOString()
  try {
    const res = await requestNoRedirect(url(peer), { timeoutMs, maxBytes: 4 * 1024 * 1024 })
    const latency_ms = Math.round((performance.now() - started) * 10) / 10
    const status = res.json<LocalHaStatus>()
    if (typeof status !== 'object' || status === null || typeof status.role !== 'string') {
      return { reachable: true, latency_ms, checked_at, error: 'the peer answered without an HA status', status: null }
    }
    return { reachable: true, latency_ms, checked_at, error: null, status }
  } catch (err) {
    return { reachable: false, latency_ms: null, checked_at, error: peerError(peer, err), status: null }
  }
}

/**
 * Why the peer's status could not be fetched. A refused connection (`connect ECONNREFUSED ...`)
 * is said in words, as the knotd check says a refused query: nothing listens on the peer API
 * address, so the peer's dnsctl is down or runs without that --metrics-listen.
 */
function peerError(peer: ListenAddress, err: unknown): string {
  const cause = (err as { cause?: NodeJS.ErrnoException }).cause
  if (cause?.code !== 'ECONNREFUSED') return (err as Error).message
  const host = peer.host.includes(':') ? `[${peer.host}]` : peer.host
  return `the peer's dnsctl: ${host}:${peer.port} refused the connection: nothing listens there (its dnsctl is not running, or not with --metrics-listen ${host}:${peer.port})`
}
