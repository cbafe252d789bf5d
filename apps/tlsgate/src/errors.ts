/**
 * The gate's coded errors (CLI and store). Each code is documented in the README; the CLI
 * prints the message on stderr and exits 2 for usage errors (HTTP-style 400) and 1 otherwise.
 */
import { defineErrors } from '@gatehouse/kit/errors.ts'

export const errors = defineErrors({
  invalid_fingerprint: {
    status: 400,
    message: (given: string) =>
      `fingerprint must be a JA4 fingerprint such as t13d1516h2_8daaf6152771_d8a2da3f94cd, got ${JSON.stringify(given.slice(0, 80))}`,
  },
  invalid_label: { status: 400, message: (why: string) => `label ${why}` },
  fingerprint_not_found: {
    status: 404,
    message: (fp: string) => `fingerprint ${fp} is not in the store (tlsgate list shows the stored ones)`,
  },
})

export type ErrorCode = keyof typeof errors
