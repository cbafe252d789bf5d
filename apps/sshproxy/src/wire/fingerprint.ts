/**
 * The spec's fingerprint: the first 16 bytes of SHA-256 over nine KEXINIT values joined with
 * `;` (the boolean written `true` / `false`), as 32 lowercase hex characters.
 */
import { createHash } from 'node:crypto'
import { type FINGERPRINT_FIELDS, fingerprintMaterial } from './fingerprint-material.ts'
import type { KexInit } from './kexinit.ts'

export { FINGERPRINT_FIELDS, FINGERPRINT_PATTERN, fingerprintMaterial } from './fingerprint-material.ts'

export function fingerprintOf(kex: Pick<KexInit, (typeof FINGERPRINT_FIELDS)[number]>): string {
  return createHash('sha256').update(fingerprintMaterial(kex), 'latin1').digest().subarray(0, 16).toString('hex')
}
