/**
 * Reads into a buffer the socket keeps reusing (node's `onread` option), for both sides of a
 * gate's relay (sshproxy, tlsgate) and for the HTTP lane's connections.
 *
 * Node's default reads allocate a fresh 64 KiB buffer per read and leave it to the garbage
 * collector; relaying a bulk transfer that way spent more CPU on allocation, GC and stream
 * machinery than on the copies themselves (2.4 s per GiB against about 1 s with this). The
 * price is a lifetime rule: a chunk handed to the sink is only valid during the call. A sink
 * that lets the bytes outlive the call (a socket write that was queued instead of completing
 * at once keeps a reference) calls `retain()`, and the next read goes to a fresh buffer.
 *
 * Node offers `onread` only to sockets it creates with `net.connect`; `readInto` gives an
 * accepted socket the same reads (see there).
 */
import type { OnReadOpts, Socket } from 'node:net'

/** Handles one chunk; returning false pauses the socket until `socket.resume()`. */
export type ChunkSink = (chunk: Buffer) => boolean

/** Small while the connection only exchanges handshakes or sits idle; grows when reads fill it. */
const INITIAL_BYTES = 8 * 1024
const MAX_BYTES = 128 * 1024

export class ReusedReads {
  #buffer: Buffer
  #retained = false
  #grow = false
  /** Where each chunk goes; replaced as the connection moves from handshake to relay. */
  sink: ChunkSink
  /** The socket was handed to another process (`SpliceRelays`): nothing may resume its reads. */
  detached = false

  constructor(sink: ChunkSink) {
    this.sink = sink
    this.#buffer = Buffer.allocUnsafeSlow(INITIAL_BYTES)
  }

  /** The bytes of the chunk being handled must survive this call: the next read uses a new buffer. */
  retain(): void {
    this.#retained = true
  }

  /** Pass as the `onread` option of `net.connect`. */
  get onread(): OnReadOpts {
    return {
      buffer: () => this.#next(),
      callback: (bytes, buffer) => {
        const chunk = Buffer.from(buffer.buffer, buffer.byteOffset, bytes)
        if (bytes === buffer.byteLength && buffer.byteLength < MAX_BYTES) this.#grow = true
        return this.sink(chunk)
      },
    }
  }

  #next(): Buffer {
    if (this.#retained || this.#grow) {
      const size = this.#grow ? Math.min(this.#buffer.length * 2, MAX_BYTES) : this.#buffer.length
      this.#buffer = Buffer.allocUnsafeSlow(size)
      this.#retained = false
      this.#grow = false
    }
    return this.#buffer
  }
}

/** node's own names for a socket's `onread` state (lib/net.js: kBuffer, kBufferCb, kBufferGen). */
type OnreadSlots = { buffer: symbol; callback: symbol; generator: symbol }
let slots: OnreadSlots | null | undefined

function onreadSlots(socket: Socket): OnreadSlots | null {
  if (slots !== undefined) return slots
  const bySymbol = new Map(Object.getOwnPropertySymbols(socket).map((s) => [s.description, s]))
  const [buffer, callback, generator] = [bySymbol.get('kBuffer'), bySymbol.get('kBufferCb'), bySymbol.get('kBufferGen')]
  slots = buffer && callback && generator ? { buffer, callback, generator } : null
  return slots
}

/**
 * Switch an accepted socket (left paused, e.g. after `readFirstBytes`) to the reads of
 * `reads`, as if it had been created with `onread`. Returns the bytes the stream path had
 * already buffered (forward them first), or undefined when this node does not keep the
 * `onread` state where node 24 does: the caller then keeps the stream path.
 *
 * Node builds accepted sockets itself and offers no `onread` for them, and the stream path
 * costs an upload through a gate twice the CPU of a download (a 64 KiB allocation and the
 * Readable machinery per read). The socket's own `onread` state is what `net.connect` sets
 * from the option, and its handle's `useUserBuffer` is what node calls then; setting the two
 * on a paused socket changes nothing else (same object, listeners, timers, pause/resume).
 */
export function readInto(socket: Socket, reads: ReusedReads): Buffer[] | undefined {
  const s = onreadSlots(socket)
  const handle = (socket as unknown as { _handle?: { useUserBuffer?: (b: Uint8Array) => void } })._handle
  if (!s || typeof handle?.useUserBuffer !== 'function') return undefined
  const pending: Buffer[] = []
  for (let chunk = socket.read() as Buffer | null; chunk !== null; chunk = socket.read() as Buffer | null) {
    pending.push(chunk)
  }
  const { buffer, callback } = reads.onread
  const first = (buffer as () => Buffer)()
  const target = socket as unknown as Record<symbol, unknown>
  target[s.generator] = buffer
  target[s.callback] = callback
  target[s.buffer] = first
  handle.useUserBuffer(first)
  return pending
}

/**
 * One direction of a relay without the stream machinery: each read of `reads` is written to
 * `to` at once. A write the kernel took whole leaves the read buffer free for the next read
 * (a 128 KiB chunk is above the socket's 64 KiB high-water mark, so `write` answers false
 * even then: pausing on that answer stopped and restarted reading after every chunk). A write
 * that stayed queued keeps a reference to the buffer: when `to` is full, reading stops until
 * 'drain' (the queue, and with it the buffer, is free again); otherwise the next read goes to
 * a fresh buffer.
 */
export function pipeReads(reads: ReusedReads, from: Socket, to: Socket, count?: (bytes: number) => void): void {
  const resume = () => {
    if (!reads.detached) from.resume()
  }
  reads.sink = (chunk) => {
    count?.(chunk.length)
    const more = to.write(chunk)
    if (to.writableLength === 0) return true
    if (!more) {
      to.once('drain', resume)
      return false
    }
    reads.retain()
    return true
  }
}
