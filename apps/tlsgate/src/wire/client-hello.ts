/**
 * Reading a client's ClientHello from the first bytes of a TCP stream, without terminating
 * TLS: reassemble the handshake message from one or more handshake records (each checked
 * against the record limit before it is used), then parse the ClientHello (RFC 8446 §4.1.2)
 * with every length checked against what is left. Pure functions over buffers: the caller
 * keeps reading while the answer is `more` and forwards the bytes it buffered, untouched.
 */
import {
  CONTENT_HANDSHAKE,
  EXT,
  HANDSHAKE_CLIENT_HELLO,
  HANDSHAKE_HEADER,
  MAX_HELLO,
  MAX_HELLO_RECORDS,
  MAX_RECORD,
  RECORD_HEADER,
} from './constants.ts'

/** Why bytes were refused; `code` is stable and logged, never sent to the client. */
export type HelloErrorCode =
  | 'not_tls'
  | 'record_invalid'
  | 'not_client_hello'
  | 'hello_too_large'
  | 'too_many_records'
  | 'hello_malformed'
  | 'extension_malformed'

export class HelloError extends Error {
  override readonly name = 'HelloError'
  readonly code: HelloErrorCode
  constructor(code: HelloErrorCode, message: string) {
    super(message)
    this.code = code
  }
}

export interface ClientHello {
  /** legacy_version (0x0303 for TLS 1.2 and 1.3 clients). */
  legacyVersion: number
  /** In the client's order, GREASE included (the fingerprints drop it). */
  ciphers: number[]
  extensions: number[]
  supportedGroups: number[]
  ecPointFormats: number[]
  signatureAlgorithms: number[]
  supportedVersions: number[]
  /** ALPN protocol names as raw bytes (JA4 reads the first). */
  alpn: Buffer[]
  /** Whether a server_name extension is present (JA4's `d`/`i`). */
  hasServerName: boolean
  /** The host_name, lower-cased, when it is a plausible DNS name; undefined otherwise. */
  sni: string | undefined
}

export type HelloState =
  /** Not enough bytes yet: read until the buffer holds at least `need` bytes. */
  | { kind: 'more'; need: number }
  /** The ClientHello, and how many bytes of the buffer its records took. */
  | { kind: 'done'; hello: ClientHello; consumed: number }
  | { kind: 'error'; error: HelloError }

const fail = (code: HelloErrorCode, message: string): HelloState => ({
  kind: 'error',
  error: new HelloError(code, message),
})

/**
 * Look at the bytes received so far. Call again with more bytes while the answer is `more`.
 *
 * @example
 * const state = readClientHello(buffer)
 * if (state.kind === 'done') computeJa4(state.hello)
 */
export function readClientHello(buffer: Buffer): HelloState {
  return new HelloReader().read(buffer)
}

/**
 * The same reading for a buffer that grows between calls (each call's buffer starts with the
 * previous call's bytes, as `readFirstBytes` gathers them): records already checked are not
 * walked again, so a hello cut into many small records arriving one by one costs linear time
 * (walking them all on every call cost 160 s of CPU for a 32 KiB hello in 1-byte records).
 * Record positions are kept, not slices, so older buffers are not held.
 */
export class HelloReader {
  #offset = 0
  /** [start, end) of each record's fragment in the buffer. */
  readonly #fragments: Array<[number, number]> = []
  #have = 0
  #total = -1 // handshake header + body, once the header is known

  read(buffer: Buffer): HelloState {
    for (;;) {
      const offset = this.#offset
      if (buffer.length < offset + RECORD_HEADER) return { kind: 'more', need: offset + RECORD_HEADER }
      const type = buffer[offset]!
      const major = buffer[offset + 1]!
      const length = buffer.readUInt16BE(offset + 3)
      if (type !== CONTENT_HANDSHAKE) {
        return offset === 0
          ? fail('not_tls', `first byte 0x${type.toString(16).padStart(2, '0')} is not a TLS handshake record`)
          : fail('record_invalid', `record type ${type} inside the ClientHello`)
      }
      if (major !== 3)
        return fail(offset === 0 ? 'not_tls' : 'record_invalid', `record version major ${major} is not 3`)
      if (length === 0 || length > MAX_RECORD) return fail('record_invalid', `record length ${length} out of range`)
      if (this.#fragments.length >= MAX_HELLO_RECORDS) {
        return fail('too_many_records', `ClientHello spread over more than ${MAX_HELLO_RECORDS} records`)
      }
      const end = offset + RECORD_HEADER + length
      if (buffer.length < end) return { kind: 'more', need: end }
      this.#fragments.push([offset + RECORD_HEADER, end])
      this.#have += length
      this.#offset = end
      if (this.#total < 0 && this.#have >= HANDSHAKE_HEADER) {
        const head = this.#message(buffer)
        if (head[0] !== HANDSHAKE_CLIENT_HELLO) return fail('not_client_hello', `handshake type ${head[0]} first`)
        const bodyLength = head.readUIntBE(1, 3)
        if (bodyLength > MAX_HELLO)
          return fail('hello_too_large', `ClientHello of ${bodyLength} bytes (max ${MAX_HELLO})`)
        this.#total = HANDSHAKE_HEADER + bodyLength
      }
      if (this.#total >= 0 && this.#have >= this.#total) {
        const message = this.#message(buffer)
        // Bytes of a following handshake message in the same record would be a protocol error;
        // the server will say so. The gate only reads the hello.
        try {
          return {
            kind: 'done',
            hello: parseClientHello(message.subarray(HANDSHAKE_HEADER, this.#total)),
            consumed: end,
          }
        } catch (err) {
          if (err instanceof HelloError) return { kind: 'error', error: err }
          throw err
        }
      }
    }
  }

  /** The handshake bytes gathered so far, one slice when they came in one record. */
  #message(buffer: Buffer): Buffer {
    const parts = this.#fragments
    if (parts.length === 1) return buffer.subarray(parts[0]![0], parts[0]![1])
    return Buffer.concat(
      parts.map(([a, b]) => buffer.subarray(a, b)),
      this.#have,
    )
  }
}

/** A cursor over one length-delimited block that refuses reads past its end. */
class Reader {
  readonly #b: Buffer
  #at: number
  readonly #end: number
  readonly #code: HelloErrorCode
  constructor(b: Buffer, code: HelloErrorCode, start = 0, end = b.length) {
    this.#b = b
    this.#at = start
    this.#end = end
    this.#code = code
  }
  #need(n: number, what: string) {
    if (this.#at + n > this.#end) throw new HelloError(this.#code, `${what} runs past its block`)
  }
  u8(what: string): number {
    this.#need(1, what)
    return this.#b[this.#at++]!
  }
  u16(what: string): number {
    this.#need(2, what)
    const v = this.#b.readUInt16BE(this.#at)
    this.#at += 2
    return v
  }
  bytes(n: number, what: string): Buffer {
    this.#need(n, what)
    const out = this.#b.subarray(this.#at, this.#at + n)
    this.#at += n
    return out
  }
  /** A sub-reader over the next `n` bytes. */
  block(n: number, what: string, code = this.#code): Reader {
    return new Reader(this.bytes(n, what), code)
  }
  u16List(what: string, lengthBytes: 1 | 2 = 2): number[] {
    const n = lengthBytes === 1 ? this.u8(what) : this.u16(what)
    if (n % 2 !== 0) throw new HelloError(this.#code, `${what} has an odd length`)
    const r = this.block(n, what)
    const out: number[] = []
    while (!r.done) out.push(r.u16(what))
    return out
  }
  get done(): boolean {
    return this.#at >= this.#end
  }
}

const HOST = /^[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*\.?$/

/** Parse a ClientHello body (after the 4-byte handshake header). Throws HelloError. */
export function parseClientHello(body: Buffer): ClientHello {
  const r = new Reader(body, 'hello_malformed')
  const legacyVersion = r.u16('legacy_version')
  r.bytes(32, 'random')
  const sessionId = r.u8('legacy_session_id length')
  if (sessionId > 32) throw new HelloError('hello_malformed', `session id of ${sessionId} bytes (max 32)`)
  r.bytes(sessionId, 'legacy_session_id')
  const ciphers = r.u16List('cipher_suites')
  if (ciphers.length === 0) throw new HelloError('hello_malformed', 'no cipher suites')
  const compression = r.u8('compression_methods length')
  if (compression === 0) throw new HelloError('hello_malformed', 'no compression methods')
  r.bytes(compression, 'compression_methods')
  const hello: ClientHello = {
    legacyVersion,
    ciphers,
    extensions: [],
    supportedGroups: [],
    ecPointFormats: [],
    signatureAlgorithms: [],
    supportedVersions: [],
    alpn: [],
    hasServerName: false,
    sni: undefined,
  }
  if (r.done) return hello // SSL 3.0-era hellos may end here (no extensions block)
  const exts = r.block(r.u16('extensions length'), 'extensions', 'extension_malformed')
  if (!r.done) throw new HelloError('hello_malformed', 'bytes after the extensions block')
  while (!exts.done) {
    const type = exts.u16('extension type')
    const data = exts.block(exts.u16('extension length'), `extension ${type}`)
    hello.extensions.push(type)
    readExtension(hello, type, data)
  }
  return hello
}

function readExtension(hello: ClientHello, type: number, data: Reader): void {
  switch (type) {
    case EXT.serverName: {
      hello.hasServerName = true
      if (data.done) return // a server's empty echo; a client should not send it, but it is harmless
      const list = data.block(data.u16('server_name_list length'), 'server_name_list')
      while (!list.done) {
        const nameType = list.u8('name_type')
        const name = list.bytes(list.u16('host_name length'), 'host_name')
        if (nameType === 0 && hello.sni === undefined) {
          const text = name.toString('latin1').toLowerCase()
          if (name.length <= 253 && HOST.test(text)) hello.sni = text.replace(/\.$/, '')
        }
      }
      return
    }
    case EXT.supportedGroups:
      hello.supportedGroups = data.u16List('supported_groups')
      return
    case EXT.ecPointFormats: {
      const n = data.u8('ec_point_formats length')
      hello.ecPointFormats = [...data.bytes(n, 'ec_point_formats')]
      return
    }
    case EXT.signatureAlgorithms:
      hello.signatureAlgorithms = data.u16List('signature_algorithms')
      return
    case EXT.alpn: {
      const list = data.block(data.u16('alpn list length'), 'alpn list')
      while (!list.done) hello.alpn.push(list.bytes(list.u8('alpn name length'), 'alpn name'))
      return
    }
    case EXT.supportedVersions:
      hello.supportedVersions = data.u16List('supported_versions', 1)
      return
    default:
      return
  }
}
