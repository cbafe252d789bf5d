/**
 * Reading a client's first bytes until a parser can decide (the SSH identification and
 * KEXINIT, a TLS ClientHello): chunks are gathered until the buffer holds the `need` the parser
 * asked for, with one deadline for the whole read (a client trickling bytes gets no more), and
 * the socket is left paused with everything it sent in the returned buffer.
 */
import type { Socket } from 'node:net'

/** A parser's answer: `{ kind: 'more', need }` until it can decide, then anything else. */
type More = { kind: 'more'; need: number }

export type FirstBytesOutcome<S> =
  /** The parser decided (done or refused); `buffer` holds every byte read so far. */
  { kind: 'parsed'; state: Exclude<S, More>; buffer: Buffer } | { kind: 'timeout' } | { kind: 'closed' }

/**
 * @example
 * const r = await readFirstBytes(socket, 10_000, readClientHello)
 * if (r.kind === 'parsed' && r.state.kind === 'done') forward(r.buffer)
 */
export function readFirstBytes<S extends { kind: string }>(
  socket: Socket,
  timeoutMs: number,
  parse: (buffer: Buffer) => S,
): Promise<FirstBytesOutcome<S>> {
  return new Promise((resolve) => {
    // Gathered bytes at the front of `store`, which grows by doubling: a client sending its
    // first bytes in many small pieces costs linear copying, not a copy of everything per piece.
    let store: Buffer = Buffer.alloc(0)
    let total = 0
    let need = 1
    const finish = (outcome: FirstBytesOutcome<S>) => {
      clearTimeout(timer)
      socket.off('data', onData)
      socket.off('close', onClose)
      socket.pause()
      resolve(outcome)
    }
    const timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs)
    const onClose = () => finish({ kind: 'closed' })
    const onData = (chunk: Buffer) => {
      if (total === 0)
        store = chunk // the usual case: everything in the first chunk, no copy
      else {
        if (total + chunk.length > store.length) {
          const grown = Buffer.allocUnsafe(Math.max(2 * store.length, total + chunk.length))
          store.copy(grown, 0, 0, total)
          store = grown
        }
        chunk.copy(store, total)
      }
      total += chunk.length
      if (total < need) return
      // Bytes before `total` are never written again, so what the parser kept stays valid.
      const buffer = store.subarray(0, total)
      const state = parse(buffer)
      if (state.kind === 'more') need = (state as unknown as More).need
      else finish({ kind: 'parsed', state: state as Exclude<S, More>, buffer })
    }
    socket.on('data', onData)
    socket.on('close', onClose)
    socket.resume()
  })
}
