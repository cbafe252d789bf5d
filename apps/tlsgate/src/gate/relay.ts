/**
 * The backend side of an allowed connection: dialing (time-bounded, with the optional PROXY v2
 * header first), then relaying. The client's buffered bytes go to the backend untouched, then
 * bytes flow both ways until either side closes or the connection is idle. The backend side
 * and the client side both read into reused buffers (kit `ReusedReads`, `readInto`) and write
 * each read straight to the other socket, pausing while it is full.
 * Bytes are counted from the sockets at close, not per chunk.
 */
import { connect, type Socket } from 'node:net'
import { formatListenAddress, normalizeIp } from '@gatehouse/kit/net.ts'
import { pipeReads, ReusedReads, readInto } from '@gatehouse/kit/reused-reads.ts'
import { watchRelay } from '@gatehouse/kit/splice-relay.ts'
import { proxyV2Header } from '../wire/proxy-protocol.ts'
import type { RouteContext } from './connection.ts'

const KEEPALIVE_MS = 60_000

/** `host:port`, an IPv6 host in brackets (the kit's). */
export const formatAddress = formatListenAddress

export interface Backend {
  socket: Socket
  /** The socket's reads (no 'data' events): point `sink` where the bytes go. */
  reads: ReusedReads
}

/** Connect to the route's backend; rejects with `<address> connection refused` (or the error) in time. */
export function dialBackend(ctx: RouteContext, client: Socket): Promise<Backend> {
  const address = ctx.route.backend
  return new Promise((resolve, reject) => {
    // Until a relay or a dialogue takes over, the backend's bytes wait in its socket.
    const reads = new ReusedReads(() => false)
    const socket = connect({ host: address.host, port: address.port, noDelay: true, onread: reads.onread })
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`${formatAddress(address)} connect timed out`))
    }, ctx.backendTimeoutMs)
    const onError = (err: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      reject(new Error(`${formatAddress(address)} ${err.code === 'ECONNREFUSED' ? 'connection refused' : err.message}`))
    }
    socket.once('error', onError)
    socket.once('connect', () => {
      clearTimeout(timer)
      socket.off('error', onError)
      // Until the relay or the SMTP dialogue adds its own, an error (a backend that resets at
      // once, failing the PROXY header's write) must not go unheard: it ends in 'close'.
      socket.on('error', () => {})
      if (ctx.proxyProtocol) {
        const src = { ip: normalizeIp(client.remoteAddress ?? '0.0.0.0'), port: client.remotePort ?? 0 }
        const dst = { ip: normalizeIp(client.localAddress ?? '0.0.0.0'), port: client.localPort ?? 0 }
        socket.write(proxyV2Header(src, dst))
      }
      resolve({ socket, reads })
    })
  })
}

export function relay(ctx: RouteContext, client: Socket, upstream: Backend, fromClient: Buffer): void {
  const { socket: backend, reads } = upstream
  client.setNoDelay(true)
  // Find vanished peers (no FIN) long before the idle timeout.
  client.setKeepAlive(true, KEEPALIVE_MS)
  backend.setKeepAlive(true, KEEPALIVE_MS)
  const backendWrittenBefore = backend.bytesWritten
  const clientWrittenBefore = client.bytesWritten
  backend.on('error', () => client.destroy())
  client.on('error', () => backend.destroy())
  backend.once('close', () => {
    ctx.metrics.up.inc(backend.bytesWritten - backendWrittenBefore)
    ctx.metrics.down.inc(client.bytesWritten - clientWrittenBefore)
    client.destroySoon()
  })
  client.once('close', () => backend.destroySoon())
  backend.write(fromClient)
  const clientReads = new ReusedReads(() => false)
  const buffered = readInto(client, clientReads)
  if (buffered) {
    // A long transfer moves to the splice helper (kit `SpliceRelays`), which counts what it moves.
    const moved = watchRelay(ctx, { client, backend, clientReads, backendReads: reads }, 'closing idle connection')
    pipeReads(reads, backend, client, moved)
    for (const chunk of buffered) backend.write(chunk)
    pipeReads(clientReads, client, backend, moved)
  } else {
    pipeReads(reads, backend, client)
    client.pipe(backend)
  }
  backend.once('end', () => client.end())
  if (ctx.idleTimeoutMs > 0) {
    // A socket's timer restarts on reads and on writes, so the client side sees both directions.
    client.setTimeout(ctx.idleTimeoutMs, () => {
      ctx.logger.info({ route: ctx.route.name }, 'closing idle connection')
      client.destroy()
      backend.destroy()
    })
  }
  client.resume()
  backend.resume()
}
