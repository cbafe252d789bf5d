/**
 * One client connection: admission (per-IP budget, global cap), the cached backend
 * identification, the client's identification and KEXINIT, the verdict, and for allowed
 * clients the verified backend connection and the relay.
 */
import type { Socket } from 'node:net'
import type { Logger } from '@gatehouse/kit'
import { readFirstBytes } from '@gatehouse/kit/gate-handshake.ts'
import { clientIp } from '@gatehouse/kit/gate-limits.ts'
import { fixedFieldLogger } from '@gatehouse/kit/logger.ts'
import type { SpliceRelays } from '@gatehouse/kit/splice-relay.ts'
import type { BypassRanges } from '../bypass/ranges.ts'
import type { Route } from '../config.ts'
import type { ObservationRecorder } from '../fingerprints/recorder.ts'
import type { GateStatus } from '../fingerprints/store.ts'
import { type HandshakeState, readClientHandshake } from '../wire/handshake.ts'
import { BackendError, type BackendIdentity, dialBackend, formatAddress } from './backend.ts'
import type { Result, RouteMetrics } from './gate-metrics.ts'
import type { ConnectionCap, SourceRateLimiter } from './limits.ts'
import { closeSoon, relay } from './relay.ts'

export interface RouteContext {
  route: Route
  identity: BackendIdentity
  /** The stored verdict of a fingerprint (`gateStatusReader`). */
  verdictOf: (fingerprint: string) => Promise<GateStatus>
  recorder: ObservationRecorder
  metrics: RouteMetrics
  limiter: SourceRateLimiter
  cap: ConnectionCap
  logger: Logger
  /** Open client sockets, for draining on shutdown. */
  open: Set<Socket>
  allowUnknown: boolean
  /** Trusted ranges: their clients skip the verdict (and are still observed). */
  bypass: BypassRanges
  handshakeTimeoutMs: number
  backendTimeoutMs: number
  idleTimeoutMs: number
  /** Long transfers leave the process (kit `SpliceRelays`); absent: every relay stays in-process. */
  splice?: SpliceRelays
}

type Done = Extract<HandshakeState, { kind: 'done' }>
type HandshakeOutcome = { kind: 'done'; state: Done; buffer: Buffer } | { kind: Result; detail?: string }

export function handleClient(ctx: RouteContext, client: Socket): void {
  const route = ctx.route.name
  ctx.metrics.connections.inc()
  client.on('error', () => {}) // errors end in 'close'; nothing to add
  const ip = clientIp(client)
  const port = client.remotePort ?? 0
  const finish = (result: Result) => ctx.metrics.results[result].inc()

  const rate = ctx.limiter.take(ip)
  if (!rate.ok) {
    if (rate.log) ctx.logger.warn({ route, client_ip: ip, dropped: rate.dropped }, `RATELIMIT ${ip}`)
    finish('ratelimit')
    client.destroy()
    return
  }
  const slot = ctx.cap.tryAcquire()
  if (!slot.ok) {
    if (slot.log) ctx.logger.warn({ route, active: ctx.cap.active, dropped: slot.dropped }, 'OVERLOAD')
    finish('overload')
    client.destroy()
    return
  }
  ctx.open.add(client)
  ctx.metrics.active.inc()
  client.once('close', () => {
    ctx.cap.release()
    ctx.open.delete(client)
    ctx.metrics.active.dec()
  })
  run(ctx, client, ip, port, finish).catch((err) => {
    ctx.logger.error({ route, reason: (err as Error).message }, 'connection handling failed')
    client.destroy()
  })
}

async function run(ctx: RouteContext, client: Socket, ip: string, port: number, finish: (r: Result) => void) {
  const route = ctx.route.name
  const log = { route, client_ip: ip, client_port: port }
  let identification: string
  try {
    identification = await ctx.identity.get()
  } catch (err) {
    backendFailed(ctx, err, log)
    finish('backend_error')
    client.destroy()
    return
  }
  if (client.destroyed) return finish('client_closed')
  const line = ctx.identity.cached === identification ? ctx.identity.line : undefined
  client.write(line ?? `${identification}\r\n`)

  const outcome = await readHandshake(client, ctx.handshakeTimeoutMs)
  if (outcome.kind !== 'done') {
    if (outcome.kind === 'protocol_error')
      fixedFieldLogger(ctx.logger).info({ ...log, reason: outcome.detail }, 'protocol error')
    if (outcome.kind === 'handshake_timeout') fixedFieldLogger(ctx.logger).info(log, 'handshake timed out')
    finish(outcome.kind)
    closeSoon(client)
    return
  }
  const { state, buffer } = outcome
  const fingerprint = state.fingerprint
  const bypassed = ctx.bypass.has(ip)
  let status: GateStatus | 'bypassed'
  try {
    // A trusted source skips the verdict, so a store problem does not stop it either.
    status = bypassed ? 'bypassed' : await ctx.verdictOf(fingerprint)
  } catch (err) {
    // Fail closed: without a verdict nobody is let through.
    ctx.logger.error({ ...log, fingerprint, reason: (err as Error).message }, 'verdict lookup failed')
    finish('store_error')
    closeSoon(client)
    return
  }
  const allowed = bypassed || status === 'approved' || (status === 'unknown' && ctx.allowUnknown)
  const seen = {
    fingerprint,
    identification: state.identification.line,
    clientVersion: state.identification.softwareVersion,
    kexinit: state.kexinit,
    ip,
    port,
    at: new Date().toISOString(),
    enrolled: allowed && status === 'unknown',
  }
  const logLine = { ...log, fingerprint, client_version: seen.clientVersion }
  if (!allowed) {
    ctx.recorder.add(seen)
    const result: Result = `rejected_${status === 'unknown' ? 'unknown' : status}` as Result
    fixedFieldLogger(ctx.logger).info({ ...logLine, result }, `rejected ${status} client`)
    finish(result)
    closeSoon(client)
    return
  }

  let backend: Awaited<ReturnType<typeof dialBackend>>
  try {
    backend = await dialBackend(ctx.route.backend, ctx.backendTimeoutMs)
  } catch (err) {
    ctx.recorder.add(seen)
    backendFailed(ctx, err, logLine)
    finish('backend_error')
    client.destroy()
    return
  }
  if (client.destroyed) {
    backend.socket.destroy()
    ctx.recorder.add(seen)
    return finish('client_closed')
  }
  if (backend.identification !== identification) {
    // The client already holds the old identification (it is part of the key-exchange hash):
    // refresh the cache and close before its KEXINIT is forwarded; the retry gets the new one.
    ctx.identity.set(backend.identification)
    ctx.recorder.add(seen)
    ctx.logger.warn(
      { ...logLine, previous: identification, current: backend.identification },
      'backend identification changed; cache refreshed, closing this connection',
    )
    backend.socket.destroy()
    client.destroy()
    finish('backend_changed')
    return
  }
  const relayIp = backend.socket.localAddress
  ctx.recorder.add({ ...seen, relayPort: backend.socket.localPort, ...(relayIp ? { relayIp } : {}) })
  fixedFieldLogger(ctx.logger).info(
    {
      ...logLine,
      result: bypassed ? 'bypassed' : 'allowed',
      relay_port: backend.socket.localPort,
      enrolled: seen.enrolled,
    },
    'relaying',
  )
  finish(bypassed ? 'bypassed' : 'allowed')
  relay(ctx, client, backend, buffer)
}

async function readHandshake(client: Socket, timeoutMs: number): Promise<HandshakeOutcome> {
  const r = await readFirstBytes(client, timeoutMs, readClientHandshake)
  if (r.kind === 'timeout') return { kind: 'handshake_timeout' }
  if (r.kind === 'closed') return { kind: 'client_closed' }
  if (r.state.kind === 'error') return { kind: 'protocol_error', detail: r.state.error.code }
  return { kind: 'done', state: r.state, buffer: r.buffer }
}

function backendFailed(ctx: RouteContext, err: unknown, log: Record<string, unknown>) {
  const what = err instanceof BackendError ? err.failure : 'error'
  ctx.logger.error(
    { ...log, backend: formatAddress(ctx.route.backend), reason: (err as Error).message },
    `BACKEND ${formatAddress(ctx.route.backend)} ${what}`,
  )
}
