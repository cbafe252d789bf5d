/**
 * Reads into a buffer the socket keeps reusing (node's `onread` option), for the backend side
 * of a gate's relay (sshproxy, tlsgate).
 *
 * Node's default reads allocate a fresh 64 KiB buffer per read and leave it to the garbage
 * collector; relaying a bulk transfer that way spent more CPU on allocation, GC and stream
 * machinery than on the copies themselves (2.4 s per GiB against about 1 s with this). The
 * price is a lifetime rule: a chunk handed to the sink is only valid during the call. A sink
 * that lets the bytes outlive the call (a socket write that was queued instead of completing
 * at once keeps a reference) calls `retain()`, and the next read goes to a fresh buffer.
 */
import type { OnReadOpts } from 'node:net'

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
