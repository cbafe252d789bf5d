/**
 * Local reader passwords: bcrypt (the `@node-rs/bcrypt` N-API build).
 *
 * bcrypt only reads the first 72 bytes of its input, so two long passphrases sharing a
 * 72-byte prefix would verify each other. Every password is therefore pre-hashed with
 * SHA-256 and encoded as base64 (44 ASCII bytes, no NUL) before bcrypt sees it: the
 * whole password counts, whatever its length or script.
 */
import { createHash } from 'node:crypto'
import bcrypt from '@node-rs/bcrypt'

export const MIN_PASSWORD_LENGTH = 12
/** Longer inputs are refused before hashing, so a request cannot buy unbounded work. */
export const MAX_PASSWORD_LENGTH = 1024

function prehash(password: string): string {
  return createHash('sha256').update(password, 'utf8').digest('base64')
}

export function hashPassword(password: string, cost: number): Promise<string> {
  return bcrypt.hash(prehash(password), { cost })
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  if (stored === null || password.length > MAX_PASSWORD_LENGTH) return false
  try {
    return await bcrypt.verify(prehash(password), stored)
  } catch {
    return false
  }
}

/** A bcrypt hash of a random value, verified against when the user does not exist (same cost, same time). */
export async function dummyHash(cost: number): Promise<string> {
  return bcrypt.hash(prehash(String(Math.random())), { cost })
}
