/**
 * What the fingerprint is computed over (fingerprint.ts hashes it), apart from the hash: the
 * CLI's `list` and its validation need the fields, the pattern and the material, and
 * `node:crypto` costs a command's start-up about 10 ms (#22).
 */
import type { KexInit } from './kexinit.ts'

/** The values that make up the fingerprint, in the spec's order (the language lists are not part). */
export const FINGERPRINT_FIELDS = [
  'kex_algorithms',
  'server_host_key_algorithms',
  'encryption_algorithms_client_to_server',
  'encryption_algorithms_server_to_client',
  'mac_algorithms_client_to_server',
  'mac_algorithms_server_to_client',
  'compression_algorithms_client_to_server',
  'compression_algorithms_server_to_client',
  'first_kex_packet_follows',
] as const

export const FINGERPRINT_PATTERN = /^[0-9a-f]{32}$/

/** The joined material the fingerprint hashes (shown by `sshproxy list -v`). */
export function fingerprintMaterial(kex: Pick<KexInit, (typeof FINGERPRINT_FIELDS)[number]>): string {
  return FINGERPRINT_FIELDS.map((f) => {
    const v = kex[f]
    return typeof v === 'boolean' ? (v ? 'true' : 'false') : v
  }).join(';')
}
