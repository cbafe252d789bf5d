/**
 * The backend side: dial with a deadline, read the server identification (servers may send
 * other lines first, RFC 4253 §4.2), and keep the cached identification every client is sent
 * before its KEXINIT is read.
 */
import { connect, type Socket } from 'node:net'
import type { ListenAddress } from '@gatehouse/kit'
import { formatListenAddress } from '@gatehouse/kit/net.ts'
import { MAX_IDENTIFICATION_LINE } from '../wire/constants.ts'
import { ReusedReads } from './reads.ts'

/** Bytes of pre-identification lines we tolerate from the backend. */
const MAX_BACKEND_PREAMBLE = 8 * 1024

export type BackendFailure =
  | 'connection refused'
  | 'timed out'
  | 'closed before identification'
  | 'invalid identification'
  | 'error'

export class BackendError extends Error {
  override readonly name = 'BackendError'
  readonly failure: BackendFailure
  constructor(failure: BackendFailure, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.failure = failure
  }
}

export interface BackendConnection {
  socket: Socket
  /** The socket's reads: the relay points `sink` at the client once it takes over. */
  reads: ReusedReads
  /** The identification line without CR LF. */
  identification: string
  /** Bytes the backend sent after its identification (often its KEXINIT); paused, not yet forwarded. */
  rest: Buffer
}

/** `host:port`, an IPv6 host in brackets (the kit's). */
export const formatAddress = formatListenAddress

/** Connect and read the identification, all within `timeoutMs`; the socket is left paused. */
export function dialBackend(address: ListenAddress, timeoutMs: number): Promise<BackendConnection> {
  return new Promise((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0)
    let settled = false
    const reads = new ReusedReads((chunk) => onChunk(chunk))
    const socket = connect({ host: address.host, port: address.port, noDelay: true, onread: reads.onread })
    const fail = (err: BackendError) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      reject(err)
    }
    const timer = setTimeout(
      () => fail(new BackendError('timed out', `no identification within ${timeoutMs} ms`)),
      timeoutMs,
    )
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') fail(new BackendError('connection refused', err.message, { cause: err }))
      else fail(new BackendError('error', err.code ?? err.message, { cause: err }))
    })
    socket.on('close', () => fail(new BackendError('closed before identification', 'backend closed the connection')))
    // Returns false (pause reading) once the identification is in or the dial has failed.
    const onChunk = (chunk: Buffer): boolean => {
      if (settled) return false
      // The chunk lives in a reused buffer: keep a copy.
      buf = Buffer.concat([buf, chunk])
      for (;;) {
        const lf = buf.indexOf(0x0a)
        if (lf === -1) {
          if (buf.length >= MAX_IDENTIFICATION_LINE || buf.length > MAX_BACKEND_PREAMBLE) {
            fail(new BackendError('invalid identification', 'backend line too long'))
            return false
          }
          return true
        }
        const line = buf.subarray(0, lf).toString('latin1').replace(/\r$/, '')
        buf = buf.subarray(lf + 1)
        if (line.startsWith('SSH-')) {
          if (lf + 1 > MAX_IDENTIFICATION_LINE || !/^SSH-2\.0-[\x20-\x7e]+$|^SSH-1\.99-[\x20-\x7e]+$/.test(line)) {
            fail(new BackendError('invalid identification', 'backend sent an invalid SSH identification'))
            return false
          }
          settled = true
          clearTimeout(timer)
          socket.pause()
          socket.removeAllListeners('close')
          socket.removeAllListeners('error')
          // The relay attaches its own handlers; until then an error must not crash the process.
          socket.on('error', () => {})
          const conn: BackendConnection = { socket, reads, identification: line, rest: buf }
          // Reading is stopped until the relay takes over; should a read still come, keep it.
          reads.sink = (more) => {
            conn.rest = Buffer.concat([conn.rest, more])
            return false
          }
          resolve(conn)
          return false
        }
        if (lf + 1 > MAX_BACKEND_PREAMBLE) {
          fail(new BackendError('invalid identification', 'backend preamble too long'))
          return false
        }
      }
    }
  })
}

/** Probe: connect, read the identification, close. */
export async function probeBackend(address: ListenAddress, timeoutMs: number): Promise<string> {
  const conn = await dialBackend(address, timeoutMs)
  conn.socket.on('error', () => {})
  conn.socket.destroy()
  return conn.identification
}

/** The cached backend identification of one route; an empty cache is filled by one shared probe. */
export class BackendIdentity {
  readonly address: ListenAddress
  readonly #timeoutMs: number
  #value: string | undefined
  #line: Buffer | undefined
  #probing: Promise<string> | undefined

  constructor(address: ListenAddress, timeoutMs: number) {
    this.address = address
    this.#timeoutMs = timeoutMs
  }

  get cached(): string | undefined {
    return this.#value
  }

  set(identification: string): void {
    this.#value = identification
    this.#line = Buffer.from(`${identification}\r\n`, 'latin1')
  }

  /** The cached identification with CR LF, encoded once (written to every client). */
  get line(): Buffer | undefined {
    return this.#line
  }

  /** The cached value, or a probe's result (concurrent callers share one probe). */
  get(): Promise<string> {
    if (this.#value !== undefined) return Promise.resolve(this.#value)
    this.#probing ??= probeBackend(this.address, this.#timeoutMs).then(
      (id) => {
        this.#probing = undefined
        this.set(id)
        return id
      },
      (err) => {
        this.#probing = undefined
        throw err
      },
    )
    return this.#probing
  }
}
