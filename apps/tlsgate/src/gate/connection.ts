/**
 * One client connection on a TLS route: admission (per-IP budget, global cap), the
 * ClientHello read without terminating TLS (capped in size and time), JA4/JA3 and SNI, the
 * verdict, and for allowed clients the backend connection (with an optional PROXY v2 header),
 * the buffered bytes forwarded untouched and the relay both ways. Refused clients get a TLS
 * `access_denied` alert and the backend is never contacted.
 */
import type { Socket } from 'node:net'
import type { BypassRanges } from '@gatehouse/kit/gate-bypass.ts'
import { readFirstBytes } from '@gatehouse/kit/gate-handshake.ts'
import { type ConnectionCap, clientIp, type SourceRateLimiter } from '@gatehouse/kit/gate-limits.ts'
import { fixedFieldLogger, type Logger } from '@gatehouse/kit/logger.ts'
import type { SpliceRelays } from '@gatehouse/kit/splice-relay.ts'
import type { Route } from '../config.ts'
import type { ObservationRecorder } from '../fingerprints/recorder.ts'
import type { GateStatus } from '../fingerprints/store.ts'
import { type HelloErrorCode, HelloReader } from '../wire/client-hello.ts'
import { computeFingerprints, type TlsFingerprints } from '../wire/fingerprints.ts'
import type { Result, RouteMetrics } from './metrics.ts'
import { type Backend, dialBackend, relay } from './relay.ts'

export interface RouteContext {
  route: Route
  /** The stored verdict of a fingerprint (`gateStatusReader`). */
  verdictOf: (fingerprint: string) => Promise<GateStatus>
  recorder: ObservationRecorder
  metrics: RouteMetrics
  limiter: SourceRateLimiter
  cap: ConnectionCap
  logger: Logger
  /** Open client sockets, for draining on shutdown. */
  open: Set<Socket>
  /** Refuse unknown and pending clients too (`--enforce-unknown`). */
  enforceUnknown: boolean
  proxyProtocol: boolean
  /** Trusted ranges: their clients skip the verdict (and are still observed). */
  bypass: BypassRanges
  helloTimeoutMs: number
  backendTimeoutMs: number
  idleTimeoutMs: number
  /** Long transfers leave the process (kit `SpliceRelays`); absent: every relay stays in-process. */
  splice?: SpliceRelays
  /** Observes an SMTP route's outcomes for its correlation reports. */
  onOutcome?: (outcome: ConnectionOutcome) => void
}

export interface ConnectionOutcome {
  result: Result
  ip: string
  fingerprint?: string
}

/** TLSPlaintext alert(21), TLS 1.2 record version, level fatal(2), access_denied(49): RFC 8446 §6.2. */
export const ACCESS_DENIED_ALERT = Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31])

type HelloOutcome =
  | { kind: 'done'; fingerprints: TlsFingerprints; sni: string | undefined; buffer: Buffer }
  | { kind: 'not_tls' | 'protocol_error' | 'hello_timeout' | 'client_closed'; detail?: HelloErrorCode }

/** The client's canonical address (the kit's, shared with sshproxy). */
export { clientIp }

/** Admission for every route kind; false when the connection was dropped. */
export function admit(ctx: RouteContext, client: Socket, ip: string): boolean {
  const route = ctx.route.name
  ctx.metrics.connections.inc()
  client.on('error', () => {}) // errors end in 'close'; nothing to add
  const rate = ctx.limiter.take(ip)
  if (!rate.ok) {
    if (rate.log) ctx.logger.warn({ route, client_ip: ip, dropped: rate.dropped }, `RATELIMIT ${ip}`)
    ctx.metrics.results.ratelimit.inc()
    client.destroy()
    return false
  }
  const slot = ctx.cap.tryAcquire()
  if (!slot.ok) {
    if (slot.log) ctx.logger.warn({ route, active: ctx.cap.active, dropped: slot.dropped }, 'OVERLOAD')
    ctx.metrics.results.overload.inc()
    client.destroy()
    return false
  }
  ctx.open.add(client)
  ctx.metrics.active.inc()
  client.once('close', () => {
    ctx.cap.release()
    ctx.open.delete(client)
    ctx.metrics.active.dec()
  })
  return true
}

export function handleTlsClient(ctx: RouteContext, client: Socket): void {
  const ip = clientIp(client)
  if (!admit(ctx, client, ip)) return
  gateTls(ctx, client, ip, undefined).catch((err) => {
    ctx.logger.error({ route: ctx.route.name, reason: (err as Error).message }, 'connection handling failed')
    client.destroy()
  })
}

/**
 * From the ClientHello on: fingerprint, verdict, relay. `backend`, when given, is already
 * connected (SMTP routes, whose STARTTLS dialogue needs the backend first).
 */
export async function gateTls(
  ctx: RouteContext,
  client: Socket,
  ip: string,
  backend: Backend | undefined,
): Promise<void> {
  const route = ctx.route.name
  const port = client.remotePort ?? 0
  const log = { route, client_ip: ip, client_port: port }
  const finish = (result: Result, fingerprint?: string) => {
    ctx.metrics.results[result].inc()
    ctx.onOutcome?.({ result, ip, ...(fingerprint ? { fingerprint } : {}) })
  }
  const hello = await readHello(client, ctx.helloTimeoutMs)
  if (hello.kind !== 'done') {
    if (hello.kind === 'not_tls' || hello.kind === 'protocol_error') {
      fixedFieldLogger(ctx.logger).info(
        { ...log, reason: hello.detail },
        hello.kind === 'not_tls' ? 'not TLS' : 'protocol error',
      )
    } else if (hello.kind === 'hello_timeout') fixedFieldLogger(ctx.logger).info(log, 'ClientHello timed out')
    finish(hello.kind)
    backend?.socket.destroy()
    client.destroy()
    return
  }
  const { fingerprints: f, sni, buffer } = hello
  const fingerprint = f.ja4
  const bypassed = ctx.bypass.has(ip)
  let status: GateStatus | 'bypassed'
  try {
    // A trusted source skips the verdict, so a store problem does not stop it either.
    status = bypassed ? 'bypassed' : await ctx.verdictOf(fingerprint)
  } catch (err) {
    // Fail closed for enforced services; a public website stays reachable (web-shaped default).
    ctx.logger.error({ ...log, fingerprint, reason: (err as Error).message }, 'verdict lookup failed')
    if (ctx.enforceUnknown) {
      finish('store_error', fingerprint)
      backend?.socket.destroy()
      client.destroy()
      return
    }
    status = 'unknown'
  }
  const refused = status === 'blocked' || (ctx.enforceUnknown && (status === 'unknown' || status === 'pending'))
  const seen = {
    fingerprint,
    metadata: { sni: sni ?? '', ja3: f.ja3, ja4: f.ja4, ja4_r: f.ja4Raw },
    ip,
    port,
    at: new Date().toISOString(),
    refused,
  }
  ctx.recorder.add(seen)
  const line = { ...log, fingerprint, ja3: f.ja3, sni: sni ?? null }
  if (refused) {
    const result = `refused_${status}` as Result
    fixedFieldLogger(ctx.logger).info({ ...line, result }, `refused ${status} client`)
    finish(result, fingerprint)
    backend?.socket.destroy()
    client.end(ACCESS_DENIED_ALERT)
    client.destroySoon()
    return
  }
  let upstream: Backend
  try {
    upstream = backend ?? (await dialBackend(ctx, client))
  } catch (err) {
    ctx.logger.error({ ...line, reason: (err as Error).message }, `BACKEND ${(err as Error).message}`)
    finish('backend_error', fingerprint)
    client.destroy()
    return
  }
  if (client.destroyed) {
    upstream.socket.destroy()
    finish('client_closed', fingerprint)
    return
  }
  ctx.logger.debug({ ...line, result: bypassed ? 'bypassed' : 'allowed', status }, 'relaying')
  finish(bypassed ? 'bypassed' : 'allowed', fingerprint)
  relay(ctx, client, upstream, buffer)
}

/** Read until the ClientHello is complete, refused, or the deadline passes; the socket is left paused. */
export async function readHello(client: Socket, timeoutMs: number): Promise<HelloOutcome> {
  // One deadline for the whole hello: a client trickling a byte at a time (slowloris) gets no more.
  const reader = new HelloReader()
  const r = await readFirstBytes(client, timeoutMs, (buffer) => reader.read(buffer))
  if (r.kind === 'timeout') return { kind: 'hello_timeout' }
  if (r.kind === 'closed') return { kind: 'client_closed' }
  if (r.state.kind === 'error') {
    const code = r.state.error.code
    return { kind: code === 'not_tls' ? 'not_tls' : 'protocol_error', detail: code }
  }
  return { kind: 'done', fingerprints: computeFingerprints(r.state.hello), sni: r.state.hello.sni, buffer: r.buffer }
}
