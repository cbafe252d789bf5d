/**
 * Tokens and secrets: 32 random bytes in base64url, stored only as SHA-256 hashes,
 * compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/**
 * A fresh 256-bit secret, base64url without padding (43 characters).
 *
 * @example const token = generateToken() // 'q3v…'
 */
export function generateToken(bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < 16) throw new TypeError('tokens need at least 16 random bytes')
  return randomBytes(bytes).toString('base64url')
}

/** SHA-256 of a string or bytes, as lowercase hex. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex')
}

/** SHA-256 of a token, the form in which tokens are stored. */
export function hashToken(token: string): string {
  return sha256Hex(token)
}

/** Constant-time equality for strings or bytes of any length (lengths may leak, contents never). */
export function safeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  // Compare digests so inputs of different lengths take the same path.
  const da = createHash('sha256').update(a).digest()
  const db = createHash('sha256').update(b).digest()
  return timingSafeEqual(da, db)
}

/** Whether `token` hashes to `storedHash` (hex), in constant time. */
export function verifyToken(token: string, storedHash: string): boolean {
  const given = createHash('sha256').update(token).digest()
  if (!/^[0-9a-f]{64}$/.test(storedHash)) return false
  return timingSafeEqual(given, Buffer.from(storedHash, 'hex'))
}
