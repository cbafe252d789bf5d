/**
 * Connection operations and a closed-loop load generator for the benchmark. Every operation
 * is one TCP connection on loopback; none writes to disk.
 */
import { connect, createServer, type Server, type Socket } from 'node:net'

export type Op = (port: number) => Promise<void>

function withSocket(port: number, onData: (socket: Socket, received: Buffer) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', noDelay: true })
    let received = Buffer.alloc(0)
    let done = false
    const finish = (err?: Error) => {
      if (done) return
      done = true
      socket.destroy()
      if (err) reject(err)
      else resolve()
    }
    socket.setTimeout(15_000, () => finish(new Error('timeout')))
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d])
      if (onData(socket, received)) finish()
    })
    socket.on('error', (e) => finish(e))
    socket.on('close', () => finish(new Error(`closed early after ${received.length} bytes`)))
  })
}

/** Connect, read the identification, close. */
export const identOnly: Op = (port) => withSocket(port, (_s, r) => r.includes(0x0a))

/** Connect, read the identification, send a client hello, and wait for the server to close (the gate's reject path). */
export function helloUntilClosed(hello: Buffer): Op {
  return (port) =>
    new Promise((resolve, reject) => {
      const socket = connect({ port, host: '127.0.0.1', noDelay: true })
      let sent = false
      socket.setTimeout(15_000, () => {
        socket.destroy()
        reject(new Error('timeout'))
      })
      socket.on('data', (d: Buffer) => {
        if (!sent && d.includes(0x0a)) {
          sent = true
          socket.write(hello)
        }
      })
      socket.on('error', () => {})
      socket.on('close', () => (sent ? resolve() : reject(new Error('closed before identification'))))
      socket.on('end', () => socket.end())
    })
}

/** Connect, read the identification, send a client hello, wait for the server's KEXINIT (the allow path). */
export function helloUntilServerKexinit(hello: Buffer): Op {
  return (port) =>
    withSocket(port, (socket, r) => {
      const lf = r.indexOf(0x0a)
      if (lf === -1) return false
      if (!(socket as Socket & { sent?: boolean }).sent) {
        ;(socket as Socket & { sent?: boolean }).sent = true
        socket.write(hello)
      }
      // The server's KEXINIT is a packet after the identification line.
      return r.length > lf + 1 + 5 && r.length >= lf + 1 + 4 + r.readUInt32BE(lf + 1)
    })
}

export interface LoadResult {
  ops: number
  errors: number
  seconds: number
  perSecond: number
}

/** Run `op` with `concurrency` workers for `seconds`. */
export async function closedLoop(op: Op, port: number, concurrency: number, seconds: number): Promise<LoadResult> {
  const deadline = performance.now() + seconds * 1000
  let ops = 0
  let errors = 0
  const start = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        try {
          await op(port)
          ops++
        } catch {
          errors++
        }
      }
    }),
  )
  const elapsed = (performance.now() - start) / 1000
  return { ops, errors, seconds: elapsed, perSecond: ops / elapsed }
}

/** Sequential latencies of `op` in milliseconds. */
export async function latencies(op: Op, port: number, n: number): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await op(port)
    out.push(performance.now() - t)
  }
  return out
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** A minimal SSH-like server: sends an identification and keeps connections open (memory test backend). */
export async function idleBackend(): Promise<{ port: number; server: Server; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>()
  const server = createServer((s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => {})
    s.on('data', () => {})
    s.write('SSH-2.0-OpenSSH_9.9 bench-idle\r\n')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { port: (server.address() as { port: number }).port, server, sockets }
}

/** The floor: a bare node:net server that writes an identification and closes after the client's hello. */
export async function bareIdentServer(): Promise<{ port: number; server: Server }> {
  const server = createServer((s) => {
    s.on('error', () => {})
    s.write('SSH-2.0-OpenSSH_9.9 bare\r\n')
    let got = Buffer.alloc(0)
    s.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d])
      const lf = got.indexOf(0x0a)
      // Close once the identification and the first packet are in, as the gate's reject path does.
      if (lf !== -1 && got.length >= lf + 5 && got.length >= lf + 1 + 4 + got.readUInt32BE(lf + 1)) s.end()
    })
    s.on('end', () => s.end())
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { port: (server.address() as { port: number }).port, server }
}

/** Open `n` connections, each after the identification was received (optionally sending `hello`). */
export async function openMany(port: number, n: number, hello?: Buffer): Promise<Socket[]> {
  const sockets: Socket[] = []
  for (let i = 0; i < n; i += 64) {
    const batch = await Promise.all(
      Array.from(
        { length: Math.min(64, n - i) },
        () =>
          new Promise<Socket>((resolve, reject) => {
            const s = connect({ port, host: '127.0.0.1' })
            let got = Buffer.alloc(0)
            const onData = (d: Buffer) => {
              got = Buffer.concat([got, d])
              if (!got.includes(0x0a)) return
              s.off('data', onData)
              if (hello) s.write(hello)
              s.on('data', () => {})
              resolve(s)
            }
            s.on('data', onData)
            s.on('error', reject)
          }),
      ),
    )
    sockets.push(...batch)
  }
  return sockets
}
