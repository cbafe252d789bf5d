/**
 * Console sign-in: one-time links minted through the loopback API (`dnsctl console`) and the
 * browser sessions they open. Both live in memory only, as SHA-256 hashes of their secrets: a
 * restart signs everybody out (mint a new link), and nothing secret ever reaches the database or
 * the state folder. Bounded, so a loop minting links cannot grow the process.
 */
import { generateToken, hashToken, safeEqual } from '@gatehouse/kit/secrets.ts'

/** Outstanding links and open sessions kept at most; the oldest is dropped first. */
export const MAX_LINKS = 100
export const MAX_SESSIONS = 200

export interface ConsoleSession {
  /** Who the link was minted for (`X-Dns-Actor` of every console change: `console:<name>`). */
  name: string
  csrfToken: string
  expiresAt: number
}

interface Link {
  name: string
  expiresAt: number
}

export class ConsoleSessions {
  readonly #links = new Map<string, Link>()
  readonly #sessions = new Map<string, ConsoleSession>()
  readonly #sessionTtl: number
  readonly #linkTtl: number
  readonly #now: () => number

  constructor(options: { sessionTtlMs: number; linkTtlMs: number; now?: () => number }) {
    this.#sessionTtl = options.sessionTtlMs
    this.#linkTtl = options.linkTtlMs
    this.#now = options.now ?? Date.now
  }

  /** A fresh sign-in code for `name`; usable once, until it expires. */
  mintLink(name: string): { code: string; expiresAt: number } {
    this.#sweep()
    const code = generateToken()
    const expiresAt = this.#now() + this.#linkTtl
    bounded(this.#links, MAX_LINKS).set(hashToken(code), { name, expiresAt })
    return { code, expiresAt }
  }

  /** Trade a link's code for a session (the code is spent either way); undefined when unknown or expired. */
  redeem(code: string): { token: string; session: ConsoleSession } | undefined {
    const key = hashToken(code)
    const link = this.#links.get(key)
    this.#links.delete(key)
    if (!link || link.expiresAt <= this.#now()) return undefined
    const token = generateToken()
    const session = { name: link.name, csrfToken: generateToken(), expiresAt: this.#now() + this.#sessionTtl }
    bounded(this.#sessions, MAX_SESSIONS).set(hashToken(token), session)
    return { token, session }
  }

  /** The open session of a cookie value, or undefined. */
  session(token: string | undefined): ConsoleSession | undefined {
    if (token === undefined || token.length > 100) return undefined
    const key = hashToken(token)
    const s = this.#sessions.get(key)
    if (!s) return undefined
    if (s.expiresAt <= this.#now()) {
      this.#sessions.delete(key)
      return undefined
    }
    return s
  }

  /** Whether `given` is the session's CSRF token (constant time). */
  csrfMatches(session: ConsoleSession, given: string | undefined): boolean {
    return given !== undefined && safeEqual(given, session.csrfToken)
  }

  end(token: string | undefined): void {
    if (token !== undefined) this.#sessions.delete(hashToken(token))
  }

  #sweep() {
    const now = this.#now()
    for (const [k, l] of this.#links) if (l.expiresAt <= now) this.#links.delete(k)
    for (const [k, s] of this.#sessions) if (s.expiresAt <= now) this.#sessions.delete(k)
  }
}

/** The map, with its oldest entry dropped when it is full (Maps keep insertion order). */
function bounded<V>(map: Map<string, V>, max: number): Map<string, V> {
  while (map.size >= max) map.delete(map.keys().next().value as string)
  return map
}
