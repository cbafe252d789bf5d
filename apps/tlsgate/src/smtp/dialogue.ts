/**
 * An SMTP route (`smtp:LISTEN=BACKEND`): the gate relays the plaintext SMTP dialogue between
 * client and backend, watching for the client's STARTTLS (RFC 3207) and the backend's `220`
 * answer; the client's next bytes are its ClientHello, which goes through the same
 * fingerprint and verdict as a TLS route. A refused client gets the TLS `access_denied` alert
 * and its backend connection is closed before any TLS byte reaches it.
 *
 * The backend is necessarily contacted before the verdict here (its greeting and EHLO answer
 * come first); that is the difference from a TLS route. A client that never says STARTTLS is
 * relayed as plaintext and counted (`plaintext`).
 */
import type { Socket } from 'node:net'
import { admit, clientIp, gateTls, type RouteContext } from '../gate/connection.ts'
import { type Backend, dialBackend } from '../gate/relay.ts'

/** Longest SMTP command or reply line we look at (RFC 5321 §4.5.3.1: 512 / 1000 octets). */
const MAX_LINE = 1000

/** Splits a byte stream into CRLF (or LF) terminated lines, keeping at most MAX_LINE of a partial one. */
class LineScanner {
  #partial = ''
  /** The complete lines in `chunk` (without line ends), and whether bytes follow the last one. */
  push(chunk: Buffer): { lines: string[]; trailing: number } {
    const text = this.#partial + chunk.toString('latin1')
    const parts = text.split('\n')
    const rest = parts.pop() ?? ''
    this.#partial = rest.length > MAX_LINE ? rest.slice(-MAX_LINE) : rest
    return { lines: parts.map((l) => l.replace(/\r$/, '')), trailing: rest.length }
  }
}

export function handleSmtpClient(ctx: RouteContext, client: Socket): void {
  const ip = clientIp(client)
  if (!admit(ctx, client, ip)) return
  runSmtp(ctx, client, ip).catch((err) => {
    ctx.logger.error({ route: ctx.route.name, reason: (err as Error).message }, 'connection handling failed')
    client.destroy()
  })
}

async function runSmtp(ctx: RouteContext, client: Socket, ip: string): Promise<void> {
  const log = { route: ctx.route.name, client_ip: ip, client_port: client.remotePort ?? 0 }
  let upstream: Backend
  try {
    upstream = await dialBackend(ctx, client)
  } catch (err) {
    ctx.logger.error({ ...log, reason: (err as Error).message }, `BACKEND ${(err as Error).message}`)
    ctx.metrics.results.backend_error.inc()
    ctx.onOutcome?.({ result: 'backend_error', ip })
    client.destroy()
    return
  }
  const backend = upstream.socket
  if (client.destroyed) {
    backend.destroy()
    return
  }
  const fromClient = new LineScanner()
  const fromBackend = new LineScanner()
  let awaitingTls = false
  let handedOver = false
  const plaintextEnd = () => {
    if (handedOver) return
    handedOver = true
    ctx.metrics.results.plaintext.inc()
    ctx.onOutcome?.({ result: 'plaintext', ip })
  }
  const onClientData = (chunk: Buffer) => {
    backend.write(chunk)
    const { lines, trailing } = fromClient.push(chunk)
    if (lines.some((l) => /^starttls\s*$/i.test(l))) {
      // RFC 3207 §4: STARTTLS ends a pipelined group; anything after it in plaintext would be
      // injected into the TLS session (the STARTTLS command-injection flaw): refuse.
      if (trailing > 0 || !/^starttls\s*$/i.test(lines.at(-1)!)) {
        ctx.logger.info(log, 'bytes after STARTTLS; closing')
        ctx.metrics.results.protocol_error.inc()
        handedOver = true
        client.destroy()
        backend.destroy()
        return
      }
      awaitingTls = true
      client.pause()
    }
  }
  // The backend's reads arrive in a reused buffer: a chunk is copied before it is queued.
  const onBackendData = (chunk: Buffer): boolean => {
    client.write(Buffer.from(chunk))
    if (!awaitingTls) return true
    const { lines } = fromBackend.push(chunk)
    const last = lines.at(-1)
    if (last === undefined || !/^\d{3} /.test(last)) return true // a multi-line reply continues
    awaitingTls = false
    if (!last.startsWith('220 ')) {
      client.resume() // the server declined; the dialogue goes on in plaintext
      return true
    }
    // Hand over: the client's next bytes are its ClientHello.
    handedOver = true
    client.setTimeout(0)
    client.off('data', onClientData)
    upstream.reads.sink = () => false // nothing is due before the ClientHello; the relay takes over
    gateTls(ctx, client, ip, upstream).catch((err) => {
      ctx.logger.error({ ...log, reason: (err as Error).message }, 'connection handling failed')
      client.destroy()
      backend.destroy()
    })
    return false
  }
  client.on('data', onClientData)
  upstream.reads.sink = onBackendData
  const closeBoth = () => {
    if (handedOver) return
    plaintextEnd()
    client.destroySoon()
    backend.destroySoon()
  }
  client.once('close', closeBoth)
  backend.once('close', closeBoth)
  client.on('error', () => backend.destroy())
  backend.on('error', () => client.destroy())
  client.setTimeout(ctx.helloTimeoutMs * 6, () => {
    // The plaintext phase is bounded too; after the hand-over the relay's idle timeout applies.
    if (!handedOver) {
      client.destroy()
      backend.destroy()
    }
  })
  client.resume()
}
