/**
 * HMAC-signed, short-lived values keyed from ARTSVC_COOKIE_SECRET, one key per purpose:
 *
 * - viewer tickets `<version>.<share or ->.<exp>.<mac>`, carried in the content-origin path
 *   (`/t/<ticket>/<file>`) so that relative URLs inside a bundle keep working in the
 *   sandboxed (opaque-origin) iframe, where cookies cannot be relied on;
 * - share-session cookies `<share>.<exp>.<mac>` (path `/shared/<share>`).
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

export interface Ticket {
  versionId: string
  shareId: string | undefined
  expiresAt: number
}

const PART = /^[A-Za-z0-9_-]{1,64}$/

export class Signer {
  readonly #ticketKey: Buffer
  readonly #shareKey: Buffer
  /** Tickets already verified (one page load fetches many files with the same ticket). */
  readonly #verified = new Map<string, Ticket>()

  constructor(secret: string) {
    this.#ticketKey = createHmac('sha256', secret).update('artsvc viewer ticket v1').digest()
    this.#shareKey = createHmac('sha256', secret).update('artsvc share session v1').digest()
  }

  ticket(versionId: string, shareId: string | undefined, expiresAt: number): string {
    const body = `${versionId}.${shareId ?? '-'}.${Math.ceil(expiresAt / 1000).toString(36)}`
    return `${body}.${mac(this.#ticketKey, body)}`
  }

  verifyTicket(value: string, now: number): Ticket | undefined {
    const known = this.#verified.get(value)
    if (known) return known.expiresAt > now ? known : undefined
    const ticket = this.#verifyTicket(value, now)
    if (ticket) {
      if (this.#verified.size >= 10_000) this.#verified.clear()
      this.#verified.set(value, ticket)
    }
    return ticket
  }

  #verifyTicket(value: string, now: number): Ticket | undefined {
    const parts = value.split('.')
    if (parts.length !== 4 || !parts.every((p) => PART.test(p))) return undefined
    const [versionId, share, exp, sig] = parts as [string, string, string, string]
    if (!macEquals(this.#ticketKey, `${versionId}.${share}.${exp}`, sig)) return undefined
    const expiresAt = Number.parseInt(exp, 36) * 1000
    if (!Number.isFinite(expiresAt) || expiresAt <= now) return undefined
    return { versionId, shareId: share === '-' ? undefined : share, expiresAt }
  }

  shareSession(shareId: string, expiresAt: number): string {
    const body = `${shareId}.${Math.ceil(expiresAt / 1000).toString(36)}`
    return `${body}.${mac(this.#shareKey, body)}`
  }

  /** The share id the cookie was issued for, if valid and unexpired. */
  verifyShareSession(value: string, now: number): string | undefined {
    const parts = value.split('.')
    if (parts.length !== 3 || !parts.every((p) => PART.test(p))) return undefined
    const [shareId, exp, sig] = parts as [string, string, string]
    if (!macEquals(this.#shareKey, `${shareId}.${exp}`, sig)) return undefined
    if (Number.parseInt(exp, 36) * 1000 <= now) return undefined
    return shareId
  }
}

function mac(key: Buffer, body: string): string {
  return createHmac('sha256', key).update(body).digest('base64url')
}

function macEquals(key: Buffer, body: string, given: string): boolean {
  const expected = Buffer.from(mac(key, body))
  const actual = Buffer.from(given)
  return expected.length === actual.length && timingSafeEqual(expected, actual)
}
