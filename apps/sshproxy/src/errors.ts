/**
 * The gate's coded errors (CLI and store). Each code is documented in the README; the CLI
 * prints the message on stderr and exits 2 for usage errors (HTTP-style 400) and 1 otherwise.
 */
import { defineErrors } from '@gatehouse/kit/errors.ts'

export const errors = defineErrors({
  invalid_fingerprint: {
    status: 400,
    message: (given: string) =>
      // Upper case is taken (and stored lower case): the message does not ask for lower case.
      `fingerprint must be 32 hexadecimal characters, as sshproxy list shows them, got ${JSON.stringify(given.slice(0, 80))}`,
  },
  invalid_label: { status: 400, message: (why: string) => `label ${why}` },
  invalid_window: { status: 400, message: (why: string) => `--window: ${why}` },
  fingerprint_not_found: {
    status: 404,
    message: (fp: string) => `fingerprint ${fp} is not in the store (sshproxy list shows the stored ones)`,
  },
  database_missing: {
    status: 404,
    message: (path: string) => `database ${path} does not exist (check --db, or start sshproxy serve once)`,
  },
  log_unreadable: { status: 404, message: (path: string, why: string) => `log file ${path} cannot be read (${why})` },
})

export type ErrorCode = keyof typeof errors
