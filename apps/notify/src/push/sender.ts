/**
 * Sending one Web Push message (RFC 8030) with a VAPID signature (RFC 8292) and an
 * aes128gcm-encrypted payload (RFC 8291). `web-push` builds the request (encryption and
 * the signed JWT); the kit's client sends it, so no redirect is followed, bodies are
 * bounded and every request has a deadline.
 *
 * A subscription's endpoint comes from a reader's browser, so the server is asked to POST
 * to a URL a user chose: endpoints must be https, and the connection refuses loopback,
 * private and link-local addresses (checked on the address actually dialled, after DNS,
 * so a name that later resolves inward is refused too) unless the operator allows them
 * (a push service inside the network, or tests).
 */
import { type LookupAddress, type LookupOptions, lookup } from 'node:dns'
import { HttpClientError, isPublicIp, requestNoRedirect } from '@gatehouse/kit'
import { Agent } from 'undici'
import webpush, { type Urgency } from 'web-push'

export interface VapidKeys {
  publicKey: string
  privateKey: string
}

export interface PushTarget {
  endpoint: string
  p256dh: string
  auth: string
}

export type PushOutcome =
  | { result: 'sent'; status: number }
  /** 404/410: the subscription expired or was withdrawn; remove it. */
  | { result: 'gone'; status: number }
  | { result: 'failed'; status?: number; reason: string }

export interface PushSenderOptions {
  vapid: VapidKeys
  /** VAPID contact: `mailto:` or an https URL. */
  subject: string
  ttlSeconds: number
  allowPrivate: boolean
  /** Extra trusted CA certificates (tests: the test CA). */
  ca?: string | Buffer
  timeoutMs?: number
}

/** Why an endpoint is refused, or undefined when it may be used. */
export function endpointProblem(endpoint: string, allowPrivate: boolean): string | undefined {
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return 'endpoint is not a URL'
  }
  if (url.protocol !== 'https:') return 'endpoint must be an https URL'
  if (url.username || url.password) return 'endpoint must not carry credentials'
  if (allowPrivate) return undefined
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (host === 'localhost' || host.endsWith('.localhost')) return 'endpoint must not be a loopback host'
  try {
    if (!isPublicIp(host)) return 'endpoint must not be a private, loopback or link-local address'
  } catch {
    // a DNS name: its addresses are checked when connecting
  }
  return undefined
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/** dns.lookup that refuses non-public addresses (node passes `all: true` when it races families). */
function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '')
    const refused = addresses.find((a) => !isPublicIp(a.address))
    if (refused) {
      const error: NodeJS.ErrnoException = new Error(`${hostname} resolves to non-public address ${refused.address}`)
      error.code = 'EADDRNOTPUBLIC'
      return callback(error, '')
    }
    if (options.all) return callback(null, addresses)
    const first = addresses[0]
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '')
    callback(null, first.address, first.family)
  })
}

export class PushSender {
  readonly #options: PushSenderOptions
  readonly #agent: Agent

  constructor(options: PushSenderOptions) {
    this.#options = options
    this.#agent = new Agent({
      connect: {
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.allowPrivate ? {} : { lookup: publicOnlyLookup }),
      },
      connections: 8,
      keepAliveTimeout: 30_000,
    })
  }

  async send(target: PushTarget, payload: string, urgency: Urgency): Promise<PushOutcome> {
    const problem = endpointProblem(target.endpoint, this.#options.allowPrivate)
    if (problem) return { result: 'failed', reason: problem }
    let details: webpush.RequestDetails
    try {
      details = webpush.generateRequestDetails({ endpoint: target.endpoint, keys: target }, payload, {
        vapidDetails: {
          subject: this.#options.subject,
          publicKey: this.#options.vapid.publicKey,
          privateKey: this.#options.vapid.privateKey,
        },
        TTL: this.#options.ttlSeconds,
        urgency,
        contentEncoding: 'aes128gcm',
      })
    } catch (err) {
      // A subscription whose keys web-push cannot use (checked at subscribe time, so rare).
      return { result: 'failed', reason: (err as Error).message }
    }
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(details.headers)) headers[k.toLowerCase()] = String(v)
    try {
      const res = await requestNoRedirect(details.endpoint, {
        method: 'POST',
        headers,
        body: details.body ?? undefined,
        dispatcher: this.#agent,
        maxBytes: 64 * 1024,
        timeoutMs: this.#options.timeoutMs ?? 10_000,
        accept: () => true,
      })
      if (res.status >= 200 && res.status < 300) return { result: 'sent', status: res.status }
      if (res.status === 404 || res.status === 410) return { result: 'gone', status: res.status }
      return { result: 'failed', status: res.status, reason: `push service answered ${res.status}` }
    } catch (err) {
      const status = err instanceof HttpClientError ? err.statusCode : undefined
      return {
        result: 'failed',
        ...(status !== undefined ? { status } : {}),
        reason: (err as Error).message,
      }
    }
  }

  async close(): Promise<void> {
    await this.#agent.close()
  }
}

/** A new VAPID key pair (P-256), base64url as browsers take it for `applicationServerKey`. */
export function generateVapidKeys(): VapidKeys {
  return webpush.generateVAPIDKeys()
}
