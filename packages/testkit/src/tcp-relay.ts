/**
 * A TCP relay in front of a real server, for tests of a peer that goes silent: `freeze` stops
 * forwarding on open connections, both ways, without closing them (a frozen host, a partition),
 * and `silent` holds new connections without a byte. The kit's PostgreSQL tests and artsvc's S3
 * tests use it.
 */
import { once } from 'node:events'
import { connect as connectTcp, createServer, type Socket } from 'node:net'

export interface TcpRelay {
  port: number
  /** Once set, new connections are held without a byte. */
  silent: boolean
  held: Socket[]
  /** The client side of every relayed connection still open. */
  open: Socket[]
  /** Stop forwarding on `client`'s connection (or every open one), both ways, without closing it: a server gone silent. */
  freeze(client?: Socket): void
}

/** A relay on a free loopback port to `host:port`, closed after the test. */
export async function startTcpRelay(
  t: { after: (fn: () => void) => void },
  target: { host: string; port: number },
): Promise<TcpRelay> {
  const pairs = new Map<Socket, Socket>()
  const relay: TcpRelay = {
    port: 0,
    silent: false,
    held: [],
    open: [],
    freeze(only) {
      for (const [client, upstream] of pairs) {
        if (only && client !== only) continue
        client.unpipe(upstream)
        upstream.unpipe(client)
        upstream.pause()
        // Still read (and drop) the client's bytes, so its close is seen.
        client.on('data', () => {}).resume()
      }
    },
  }
  const server = createServer((socket) => {
    socket.on('error', () => {})
    if (relay.silent) {
      relay.held.push(socket)
      return
    }
    relay.open.push(socket)
    const upstream = connectTcp(target.port, target.host)
    pairs.set(socket, upstream)
    upstream.on('error', () => socket.destroy())
    socket.on('close', () => {
      upstream.destroy()
      pairs.delete(socket)
      relay.open.splice(relay.open.indexOf(socket), 1)
    })
    socket.pipe(upstream).pipe(socket)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  relay.port = (server.address() as { port: number }).port
  t.after(() => {
    for (const s of [...relay.held, ...relay.open, ...pairs.values()]) s.destroy()
    server.close()
  })
  return relay
}
