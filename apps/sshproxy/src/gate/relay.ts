/**
 * Relaying an allowed session: the client's buffered handshake bytes go to the backend
 * intact (including anything after the KEXINIT, such as Dropbear's guessed key-exchange
 * packet), then bytes flow both ways until either side closes or the session is idle.
 */
import type { Socket } from 'node:net'
import { pipeReads, ReusedReads, readInto } from '@gatehouse/kit/reused-reads.ts'
import { watchRelay } from '@gatehouse/kit/splice-relay.ts'
import type { BackendConnection } from './backend.ts'
import type { RouteContext } from './connection.ts'

const KEEPALIVE_MS = 60_000

/** End a socket gracefully, and destroy it if the peer does not close in time. */
export function closeSoon(socket: Socket, graceMs = 5000): void {
  if (socket.destroyed) return
  socket.end()
  // Keep reading (and discarding) so the peer's FIN is seen and the socket closes promptly.
  socket.resume()
  const timer = setTimeout(() => socket.destroy(), graceMs)
  timer.unref()
  socket.once('close', () => clearTimeout(timer))
}

export function relay(ctx: RouteContext, client: Socket, backendConnection: BackendConnection, fromClient: Buffer) {
  const route = ctx.route.name
  const { up, down } = ctx.metrics
  const { socket: backend, reads, rest: fromBackend } = backendConnection
  client.setNoDelay(true)
  backend.setNoDelay(true)
  // Find vanished peers (no FIN, e.g. a laptop that went away) long before the idle timeout.
  client.setKeepAlive(true, KEEPALIVE_MS)
  backend.setKeepAlive(true, KEEPALIVE_MS)
  backend.removeAllListeners('error')
  backend.on('error', () => client.destroy())
  client.on('error', () => backend.destroy())
  // Half-close is not used by SSH; when one side is gone, finish the other gracefully.
  backend.once('close', () => closeSoon(client))
  client.once('close', () => closeSoon(backend))

  up.inc(fromClient.length)
  backend.write(fromClient)
  if (fromBackend.length > 0) {
    down.inc(fromBackend.length)
    client.write(fromBackend)
  }
  // Both directions without the stream machinery: each read goes into a reused buffer and is
  // written at once; reading stops while the other socket is full.
  const clientReads = new ReusedReads(() => false)
  const buffered = readInto(client, clientReads)
  if (buffered) {
    // A long transfer moves to the splice helper (kit `SpliceRelays`), which counts from then on.
    const moved = watchRelay(ctx, { client, backend, clientReads, backendReads: reads }, 'closing idle session')
    const countDown = (n: number) => {
      down.inc(n)
      moved?.(n)
    }
    const countUp = (n: number) => {
      up.inc(n)
      moved?.(n)
    }
    pipeReads(reads, backend, client, countDown)
    for (const chunk of buffered) {
      up.inc(chunk.length)
      backend.write(chunk)
    }
    pipeReads(clientReads, client, backend, countUp)
  } else {
    pipeReads(reads, backend, client, (n) => down.inc(n))
    client.on('data', (d: Buffer) => up.inc(d.length))
    client.pipe(backend)
  }
  if (ctx.idleTimeoutMs > 0) {
    // A socket's timer restarts on reads and on writes, so the client side sees both directions.
    client.setTimeout(ctx.idleTimeoutMs, () => {
      ctx.logger.info({ route }, 'closing idle session')
      client.destroy()
      backend.destroy()
    })
  }
  client.resume()
  backend.resume()
}
