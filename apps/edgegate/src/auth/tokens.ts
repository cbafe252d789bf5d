/**
 * Bearer secrets: 32 random bytes, base64url, behind a prefix that says what they are
 * (`egn_` node, `ega_` administrator, `egs_` dashboard session) so leaked ones are easy to
 * recognise. Stored only as SHA-256 hashes.
 */
import { generateToken, hashToken } from '@gatehouse/kit'

export const TOKEN_PREFIX = { node: 'egn_', admin: 'ega_', session: 'egs_' } as const

export function newToken(kind: keyof typeof TOKEN_PREFIX): { token: string; hash: string } {
  const token = TOKEN_PREFIX[kind] + generateToken()
  return { token, hash: hashToken(token) }
}

/** `Authorization: Bearer <token>` -> token; undefined when absent; null when malformed. */
export function bearerFrom(header: string | undefined): string | undefined | null {
  if (header === undefined) return undefined
  const m = /^Bearer ([A-Za-z0-9_-]{16,200})$/.exec(header.trim())
  return m ? m[1]! : null
}

/** One cookie's value from a Cookie header. */
export function cookieFrom(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}
