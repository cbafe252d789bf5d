/**
 * The HTTP/1.1 lane of a fast path: a connection listener in front of `node:http` that reads
 * requests straight off the socket and answers the ones the fast path takes with one write of
 * precomputed bytes. `node:http` spends about twice the CPU of the answer itself on its
 * per-request objects (IncomingMessage, ServerResponse, header validation); for artsvc's cached
 * content responses that made the difference between half of nginx's rate and most of it.
 *
 * The lane is not a second HTTP server. It accepts only a strict subset of HTTP/1.1, and a
 * connection leaves it for good, to `node:http`, at the first request outside that subset or
 * the fast path declines (after `warm`, if given, could not help), with the unread bytes
 * handed over untouched:
 * - `GET` or `HEAD`, `HTTP/1.1`, an origin-form target of visible ASCII;
 * - header lines `name: value` of a token and visible ASCII (tabs and spaces inside), exactly
 *   one `Host`, at most 64 lines, no name twice;
 * - nothing that gives a request a body or changes the connection (`Content-Length`,
 *   `Transfer-Encoding`, `Upgrade`, `Expect`, `TE`, `Trailer`, `HTTP2-Settings`, a `Connection`
 *   other than `keep-alive` or `close`);
 * - the whole head in the bytes at hand: a request split across reads is not waited for here;
 *   `node:http` reads the rest, with its own header-size limit and timeouts.
 * A request the lane answers therefore ends at its first blank line by any parser's reading
 * (no body, no folding, no bare CR or LF), so the lane and `node:http` can never disagree on
 * where the next request starts: the split that request smuggling needs does not arise.
 *
 * Responses carry the headers `node:http` would add (`Date`, `Connection`, `Keep-Alive`) in
 * the same order, so a client cannot tell the lane from the full path (tested byte by byte).
 */
import { type Server, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { Server as TlsServer } from 'node:tls'
import { ReusedReads, readInto } from './reused-reads.ts'

export interface LaneRequest {
  readonly method: 'GET' | 'HEAD'
  readonly url: string
  /** Lower-case names; each appears once. */
  readonly headers: Readonly<Record<string, string>>
}

export interface LaneAnswer {
  status: number
  /** Flat `[name, value, …]`, `content-length` included for a 200 (also for HEAD). Kept by identity: the lane caches its bytes. */
  headers: readonly string[]
  /** A latin1 string (one char per byte) or bytes; none for HEAD and 304. */
  body?: string | Buffer
  requestId: string
}

export interface LaneOptions<A extends LaneAnswer> {
  /** The answer to a request, or undefined: the connection then goes to `node:http` from that request on. */
  answer(req: LaneRequest): A | undefined
  /**
   * For a request `answer` declined: a promise that settles once the answer may be at hand
   * (a cache filled), or undefined when waiting cannot help. The lane then holds the
   * connection, reading nothing more, and asks `answer` once more; declined again (or the
   * promise rejected), the connection goes to `node:http` from that request on. Without
   * this, a connection whose first request finds a cold cache would leave the lane for good.
   */
  warm?(req: LaneRequest): Promise<unknown> | undefined
  /** Called once an answer is on its way (metrics, the access line). */
  answered(req: LaneRequest, answer: A, started: number): void
  /** An answer the lane cannot send (an invalid header: a bug); `node:http` then takes the request. */
  failed(err: unknown, req: LaneRequest): void
  /** True once the server is closing: `node:http` then answers (503 from Fastify). */
  closing(): boolean
  /** For the metrics: a request held while its cache warmed; a connection handed to `node:http`. */
  held?(): void
  handedOver?(): void
}

export interface Lane {
  /** End every connection the lane holds (they are idle between reads); for the server's close. */
  closeIdle(): void
}

const MAX_HEAD = 16 * 1024
const MAX_LINES = 64
const TARGET = /^\/[\x21-\x7e]*$/
// A header line is a token name, a colon, and a value of visible ASCII, spaces and tabs.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/
const VALUE = /^[\t\x20-\x7e]*$/
const BODY_OR_CONNECTION = new Set([
  'content-length',
  'transfer-encoding',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'http2-settings',
])
/**
 * Header names clients commonly send, each mapped to itself as a constant string. A name
 * sliced from the request is a fresh string, and V8 serves a property access keyed by a
 * fresh string in its runtime instead of the inline cache (0.4-1 µs a header: a request
 * with one header parsed in 1.8 µs, with its name's constant in 0.6 µs). A Map finds the
 * constant by the fresh string's hash without that; other names still work, at that cost.
 */
const KNOWN_NAMES = new Map(
  [
    'host',
    'connection',
    'user-agent',
    'accept',
    'accept-encoding',
    'accept-language',
    'cache-control',
    'pragma',
    'cookie',
    'referer',
    'origin',
    'if-none-match',
    'if-modified-since',
    'range',
    'if-range',
    'dnt',
    'priority',
    'upgrade-insecure-requests',
    'sec-fetch-site',
    'sec-fetch-mode',
    'sec-fetch-dest',
    'sec-fetch-user',
    'sec-ch-ua',
    'sec-ch-ua-mobile',
    'sec-ch-ua-platform',
    'sec-gpc',
    'x-request-id',
    'x-forwarded-for',
    'x-forwarded-proto',
    'x-forwarded-host',
    'x-real-ip',
    'forwarded',
    'via',
    'authorization',
  ].map((name) => [name, name]),
)
// What node:http checks in writeHead: a token name and a value without CR, LF or other controls.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/

/** The response header lines of a header array, validated once per array. */
const blocks = new WeakMap<readonly string[], string>()

function headerBlock(headers: readonly string[]): string {
  let block = blocks.get(headers)
  if (block === undefined) {
    if (headers.length % 2 !== 0) throw new TypeError('fast path headers must be [name, value, …] pairs')
    block = ''
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i]!
      const value = headers[i + 1]!
      if (!HEADER_NAME.test(name)) throw new TypeError(`invalid header name ${JSON.stringify(name)}`)
      if (!HEADER_VALUE.test(value)) throw new TypeError(`invalid value for header ${name}`)
      block += `${name}: ${value}\r\n`
    }
    blocks.set(headers, block)
  }
  return block
}

let dateLine = ''
let dateSecond = -1
function date(): string {
  const now = Date.now()
  const second = Math.floor(now / 1000)
  if (second !== dateSecond) {
    dateSecond = second
    dateLine = `Date: ${new Date(second * 1000).toUTCString()}\r\n`
  }
  return dateLine
}

/**
 * Parse the request that starts at `at`: the request and where the next one starts, or
 * undefined when it is incomplete or outside the lane's subset (see the module comment).
 */
export function parseLaneRequest(s: string, at: number): { req: LaneRequest; next: number } | undefined {
  const end = s.indexOf('\r\n\r\n', at)
  if (end < 0 || end - at > MAX_HEAD) return undefined
  let lineEnd = s.indexOf('\r\n', at)
  const line = s.slice(at, lineEnd)
  const sp1 = line.indexOf(' ')
  const method = line.slice(0, sp1)
  if (method !== 'GET' && method !== 'HEAD') return undefined
  const sp2 = line.indexOf(' ', sp1 + 1)
  if (sp2 < 0 || line.slice(sp2 + 1) !== 'HTTP/1.1') return undefined
  const url = line.slice(sp1 + 1, sp2)
  if (!TARGET.test(url)) return undefined
  const headers: Record<string, string> = Object.create(null)
  let lines = 0
  while (lineEnd < end) {
    const from = lineEnd + 2
    lineEnd = s.indexOf('\r\n', from)
    if (++lines > MAX_LINES) return undefined
    const colon = s.indexOf(':', from)
    if (colon < 0 || colon > lineEnd) return undefined
    const lower = s.slice(from, colon).toLowerCase()
    const name = KNOWN_NAMES.get(lower) ?? lower
    const value = s.slice(colon + 1, lineEnd).trim()
    // trim() also strips what is not OWS (CR, LF, vertical tab…): VALUE then sees the raw line's
    // value whole, so a byte outside the subset anywhere in it still sends the request away.
    if (!TOKEN.test(name) || !VALUE.test(s.slice(colon + 1, lineEnd))) return undefined
    if (name in headers || BODY_OR_CONNECTION.has(name)) return undefined
    if (name === 'connection') {
      const v = value.toLowerCase()
      if (v !== 'keep-alive' && v !== 'close') return undefined
    }
    headers[name] = value
  }
  if (headers.host === undefined) return undefined
  return { req: { method, url, headers }, next: end + 4 }
}

/** Put the lane in front of `server`'s own connection handling. */
export function installLane<A extends LaneAnswer>(server: Server, options: LaneOptions<A>): Lane {
  // https.Server hands node:http its sockets on 'secureConnection', http.Server on 'connection'.
  const event = server instanceof TlsServer ? 'secureConnection' : 'connection'
  const listeners = server.listeners(event)
  const nodeHttp = listeners.find((l) => l.name === 'connectionListener') as ((socket: Socket) => void) | undefined
  if (listeners.length !== 1 || nodeHttp === undefined) {
    throw new TypeError(`the HTTP lane expects node:http's connection listener alone on the server (${event})`)
  }
  /** The connections the lane reads, between requests: what `closeIdle` ends. */
  const reading = new Set<Socket>()

  const onConnection = (socket: Socket) => {
    if (options.closing()) {
      nodeHttp.call(server, socket)
      return
    }
    reading.add(socket)
    socket.setNoDelay(true)
    const onError = () => socket.destroy()
    const reads = new ReusedReads((chunk) => {
      onData(chunk)
      return true
    })
    const onTimeout = () => socket.destroy()
    const onClose = () => reading.delete(socket)
    const onDrain = () => socket.resume()
    // Between requests the lane holds an idle keep-alive connection, as node:http would.
    // (keepAliveTimeout 0: no timeout, as in node:http.)
    socket.setTimeout(server.keepAliveTimeout)
    socket.on('timeout', onTimeout)
    socket.on('error', onError)
    socket.on('close', onClose)

    const leave = () => {
      reading.delete(socket)
      // node:http's parser consumes the handle and reads it natively; should it not, reads
      // reach its 'data' listener through the stream as usual.
      reads.sink = (chunk) => socket.push(Buffer.from(chunk))
      socket.removeListener('data', onData)
      socket.removeListener('timeout', onTimeout)
      socket.removeListener('error', onError)
      socket.removeListener('close', onClose)
      socket.removeListener('drain', onDrain)
      socket.setTimeout(0)
    }

    const onData = (chunk: Buffer) => serve(chunk, undefined)

    /**
     * Answer the requests in `chunk` for as long as the fast path does. `retried`: the first of
     * them was declined once already and its cache warmed since (when it was held).
     */
    const serve = (chunk: Buffer, retried: number | undefined) => {
      const s = chunk.toString('latin1')
      let at = 0
      let out = ''
      let parts: Buffer[] | undefined
      let close = false
      let warming: Promise<unknown> | undefined
      let warmingSince = 0
      while (at < s.length) {
        const parsed = options.closing() ? undefined : parseLaneRequest(s, at)
        if (parsed === undefined) break
        const { req } = parsed
        const started = at === 0 && retried !== undefined ? retried : performance.now()
        const answer = options.answer(req)
        if (answer === undefined) {
          // A request declined again after its warming goes to node:http.
          if (options.warm !== undefined && !(at === 0 && retried !== undefined)) {
            warming = warmFor(req)
            warmingSince = started
          }
          break
        }
        let head: string
        try {
          head = headerBlock(answer.headers)
        } catch (err) {
          options.failed(err, req)
          break
        }
        at = parsed.next
        close = req.headers.connection?.toLowerCase() === 'close'
        out += `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'unknown'}\r\n${head}x-request-id: ${answer.requestId}\r\n${date()}${
          close
            ? 'Connection: close\r\n'
            : server.keepAliveTimeout > 0
              ? `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(server.keepAliveTimeout / 1000)}\r\n`
              : 'Connection: keep-alive\r\n'
        }\r\n`
        const body = req.method === 'HEAD' ? undefined : answer.body
        if (typeof body === 'string') out += body
        else if (body !== undefined && body.length > 0) {
          // Bytes go out in order after the text before them.
          parts ??= []
          parts.push(Buffer.from(out, 'latin1'), body)
          out = ''
        }
        options.answered(req, answer, started)
        if (close) break
      }
      if (parts !== undefined) {
        if (out.length > 0) parts.push(Buffer.from(out, 'latin1'))
        socket.cork()
        for (const part of parts) socket.write(part)
        socket.uncork()
      } else if (out.length > 0) socket.write(out, 'latin1')
      if (close) {
        leave()
        socket.end()
      } else if (warming !== undefined) {
        // A reused read buffer is overwritten by the next read: the held requests get their own copy.
        hold(Buffer.from(chunk.subarray(at)), warming, warmingSince)
      } else if (at < s.length) {
        // Declined, outside the subset, or incomplete: node:http takes the connection from here.
        options.handedOver?.()
        leave()
        socket.pause()
        socket.unshift(Buffer.from(at === 0 ? chunk : chunk.subarray(at)))
        nodeHttp.call(server, socket)
        socket.resume()
      } else if (socket.writableNeedDrain) {
        // The client is not reading its answers: stop reading its requests until it does.
        socket.pause()
        socket.once('drain', onDrain)
      }
    }

    const warmFor = (req: LaneRequest): Promise<unknown> | undefined => {
      try {
        return options.warm?.(req)
      } catch (err) {
        options.failed(err, req)
        return undefined
      }
    }

    /**
     * Hold the connection while its cache warms: a request is in progress, so it is neither
     * idle (closeIdle leaves it alone) nor subject to the keep-alive timeout, as in node:http.
     */
    const hold = (rest: Buffer, warming: Promise<unknown>, since: number) => {
      options.held?.()
      socket.pause()
      reading.delete(socket)
      socket.setTimeout(0)
      const retry = () => {
        if (socket.destroyed) return
        reading.add(socket)
        socket.setTimeout(server.keepAliveTimeout)
        // Reads resume on a later turn of the event loop, after `serve` has answered or passed on
        // the held requests (or paused the socket again). Left paused, a connection the answer
        // closes would never read the client's end and never close.
        socket.resume()
        serve(rest, since)
      }
      warming.then(retry, retry)
    }

    // Reads into one buffer the connection reuses (kit `ReusedReads`), not a fresh 64 KiB
    // buffer and a stream 'data' event per request; `onData` copies what it keeps. node:http,
    // once it takes the connection, reads the socket its own way (its parser consumes the handle).
    const pending = readInto(socket, reads)
    if (pending === undefined) socket.on('data', onData)
    // Bytes already read (a TLS socket may hold some): one chunk, so that a request which
    // sends the connection to node:http takes everything after it along.
    else if (pending.length > 0) onData(Buffer.concat(pending))
  }

  server.removeListener(event, nodeHttp)
  server.on(event, onConnection)
  return {
    closeIdle() {
      for (const socket of reading) socket.end()
      reading.clear()
    },
  }
}
