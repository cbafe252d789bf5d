/**
 * A Web Push service double for tests: an HTTPS server (certificate from the test CA) that
 * hands out subscriptions the way a browser's push service does and, on every push, checks
 * what a real one checks and decrypts the message with the subscription's own keys:
 * - RFC 8030: a TTL header (required), Urgency (very-low, low, normal, high) when present;
 * - RFC 8292: `Authorization: vapid t=<JWT>, k=<public key>`, an ES256 JWT signed by that key
 *   whose `aud` is the endpoint's origin, `exp` within 24 h and a `sub` contact;
 * - RFC 8291: an `aes128gcm` body (RFC 8188 header: salt, record size, sender key), decrypted
 *   with the subscription's private key and auth secret. Independent of any push library.
 * `expire(subscription)` makes later pushes to it answer 410 Gone, as a service does for an
 * unsubscribed browser; `fail(subscription, status)` answers another status.
 */
import { createDecipheriv, createECDH, hkdfSync, randomBytes, randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { importJWK, jwtVerify } from 'jose'
import type { TestCa } from './ca.ts'

export interface BrowserSubscription {
  endpoint: string
  keys: { p256dh: string; auth: string }
}

export interface ReceivedPush {
  subscription: string
  ttl: number
  urgency: string | undefined
  topic: string | undefined
  /** The VAPID JWT's claims and public key (base64url). */
  vapid: { aud: string; sub: string; exp: number; key: string }
  /** Size of the encrypted body on the wire. */
  bodyBytes: number
  /** The decrypted message. */
  plaintext: string
}

export interface PushServiceDouble {
  origin: string
  /** Messages received and decrypted, in arrival order. */
  received: ReceivedPush[]
  /** Requests refused, with why (a malformed push is a test failure, not a silent drop). */
  refused: { subscription: string; status: number; reason: string }[]
  /** A new browser-side subscription (its private key stays in the double). */
  subscribe(): BrowserSubscription
  expire(sub: BrowserSubscription): void
  fail(sub: BrowserSubscription, status: number): void
  /** Resolves once `count` pushes arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedPush[]>
  close(): Promise<void>
}

interface Entry {
  ecdh: ReturnType<typeof createECDH>
  publicKey: Buffer
  auth: Buffer
  status: number
}

/** RFC 8291 section 3.4 and RFC 8188 section 2: decrypt one aes128gcm body for a subscription. */
export function decryptAes128gcm(body: Buffer, entry: Pick<Entry, 'ecdh' | 'publicKey' | 'auth'>): string {
  if (body.length < 21) throw new Error('body shorter than the aes128gcm header')
  const salt = body.subarray(0, 16)
  const rs = body.readUInt32BE(16)
  const idlen = body[20] ?? 0
  const senderKey = body.subarray(21, 21 + idlen)
  if (idlen !== 65) throw new Error(`keyid must be the 65-byte sender public key, got ${idlen} bytes`)
  const records = body.subarray(21 + idlen)
  if (records.length > rs) throw new Error(`body holds more than one ${rs}-byte record`)
  const shared = entry.ecdh.computeSecret(senderKey)
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), entry.publicKey, senderKey])
  const ikm = Buffer.from(hkdfSync('sha256', shared, entry.auth, keyInfo, 32))
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16))
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12))
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce)
  decipher.setAuthTag(records.subarray(records.length - 16))
  const padded = Buffer.concat([decipher.update(records.subarray(0, records.length - 16)), decipher.final()])
  // The last record ends with the delimiter 0x02 followed by any number of zero bytes.
  let end = padded.length - 1
  while (end >= 0 && padded[end] === 0) end--
  if (padded[end] !== 2) throw new Error('last record lacks the 0x02 padding delimiter')
  return padded.subarray(0, end).toString('utf8')
}

async function verifyVapid(header: string | undefined, origin: string): Promise<ReceivedPush['vapid']> {
  const m = /^vapid t=([A-Za-z0-9_.-]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header ?? '')
  if (!m) throw new Error(`Authorization is not "vapid t=..., k=...": ${header ?? '(none)'}`)
  const [, token, key] = m as unknown as [string, string, string]
  const point = Buffer.from(key, 'base64url')
  if (point.length !== 65 || point[0] !== 4) throw new Error('k is not an uncompressed P-256 key')
  const jwk = {
    kty: 'EC',
    crv: 'P-256',
    x: point.subarray(1, 33).toString('base64url'),
    y: point.subarray(33).toString('base64url'),
  }
  const { payload, protectedHeader } = await jwtVerify(token, await importJWK(jwk, 'ES256'), { audience: origin })
  if (protectedHeader.alg !== 'ES256') throw new Error(`JWT alg ${protectedHeader.alg}, want ES256`)
  const now = Date.now() / 1000
  if (typeof payload.exp !== 'number' || payload.exp > now + 24 * 3600) throw new Error('exp missing or over 24 h')
  if (typeof payload.sub !== 'string' || !/^(mailto:|https:)/.test(payload.sub))
    throw new Error(`sub must be mailto: or https:, got ${String(payload.sub)}`)
  return { aud: origin, sub: payload.sub, exp: payload.exp, key }
}

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (c: Buffer) => {
      size += c.length
      if (size <= max) chunks.push(c)
    })
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

/** @example const push = await startPushService(createTestCa()); const sub = push.subscribe() */
export async function startPushService(ca: TestCa): Promise<PushServiceDouble> {
  const cert = ca.issueServer(['127.0.0.1', 'localhost'])
  const entries = new Map<string, Entry>()
  const received: ReceivedPush[] = []
  const refused: PushServiceDouble['refused'] = []
  const waiters = new Set<() => void>()
  let origin = ''

  const handle = async (req: IncomingMessage): Promise<number> => {
    const id = /^\/push\/([0-9a-f-]+)$/.exec(req.url ?? '')?.[1]
    // RFC 8030 section 5: a push service accepts up to 4,096 bytes of body; read a little more to tell.
    const body = await readBody(req, 8192)
    const entry = id ? entries.get(id) : undefined
    if (!id || !entry || req.method !== 'POST') return 404
    if (entry.status !== 201) return entry.status
    const reject = (status: number, reason: string) => {
      refused.push({ subscription: id, status, reason })
      return status
    }
    if (body.length > 4096) return reject(413, `body of ${body.length} bytes exceeds 4096`)
    const ttl = Number(req.headers.ttl)
    if (req.headers.ttl === undefined || !Number.isInteger(ttl) || ttl < 0) return reject(400, 'TTL header missing')
    const urgency = req.headers.urgency as string | undefined
    if (urgency !== undefined && !['very-low', 'low', 'normal', 'high'].includes(urgency))
      return reject(400, `bad Urgency ${urgency}`)
    if (req.headers['content-encoding'] !== 'aes128gcm') return reject(415, 'Content-Encoding must be aes128gcm')
    let vapid: ReceivedPush['vapid']
    try {
      vapid = await verifyVapid(req.headers.authorization, origin)
    } catch (err) {
      return reject(401, (err as Error).message)
    }
    let plaintext: string
    try {
      plaintext = decryptAes128gcm(body, entry)
    } catch (err) {
      return reject(400, `cannot decrypt: ${(err as Error).message}`)
    }
    received.push({
      subscription: id,
      ttl,
      urgency,
      topic: req.headers.topic as string | undefined,
      vapid,
      bodyBytes: body.length,
      plaintext,
    })
    for (const w of waiters) w()
    return 201
  }

  const server: Server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    handle(req).then(
      (status) => res.writeHead(status, { 'content-length': '0' }).end(),
      () => res.writeHead(500).end(),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`

  const idOf = (sub: BrowserSubscription) => sub.endpoint.slice(sub.endpoint.lastIndexOf('/') + 1)
  return {
    origin,
    received,
    refused,
    subscribe() {
      const id = randomUUID()
      const ecdh = createECDH('prime256v1')
      const publicKey = ecdh.generateKeys()
      const auth = randomBytes(16)
      entries.set(id, { ecdh, publicKey, auth, status: 201 })
      return {
        endpoint: `${origin}/push/${id}`,
        keys: { p256dh: publicKey.toString('base64url'), auth: auth.toString('base64url') },
      }
    },
    expire(sub) {
      const e = entries.get(idOf(sub))
      if (e) e.status = 410
    },
    fail(sub, status) {
      const e = entries.get(idOf(sub))
      if (e) e.status = status
    },
    waitFor(count, timeoutMs = 10_000) {
      if (received.length >= count) return Promise.resolve(received.slice())
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`push service: ${received.length} of ${count} pushes after ${timeoutMs} ms`))
        }, timeoutMs)
        const check = () => {
          if (received.length < count) return
          clearTimeout(timer)
          waiters.delete(check)
          resolve(received.slice())
        }
        waiters.add(check)
      })
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
