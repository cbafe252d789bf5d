/**
 * Bearer secrets: 32 random bytes, base64url, behind a prefix that says what they are
 * (`egn_` node, `ega_` administrator, `egs_` dashboard session) so leaked ones are easy to
 * recognise. Stored only as SHA-256 hashes.
 */
import { bearerToken } from '@gatehouse/kit/credentials.ts'
import { generateToken, hashToken } from '@gatehouse/kit/secrets.ts'

export const TOKEN_PREFIX = { node: 'egn_', admin: 'ega_', session: 'egs_' } as const

export function newToken(kind: keyof typeof TOKEN_PREFIX): { token: string; hash: string } {
  const token = TOKEN_PREFIX[kind] + generateToken()
  return { token, hash: hashToken(token) }
}

/**
 * `Authorization: Bearer <token>` -> token (the kit's parser, then our token alphabet and
 * length); undefined when absent; null when malformed.
 */
export function bearerFrom(header: string | undefined): string | undefined | null {
  const token = bearerToken(header)
  if (token === undefined || token === null) return token
  return /^[A-Za-z0-9_-]{16,200}$/.test(token) ? token : null
}

/** One cookie's value from a Cookie header (the kit's parser). */
export { readCookie as cookieFrom } from '@gatehouse/kit/credentials.ts'
