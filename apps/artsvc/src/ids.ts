/** Public identifiers: 96 random bits, base64url (16 characters, no dots). */
import { randomBytes } from 'node:crypto'

export function newId(): string {
  // Identifiers are pasted into shells as arguments, where one that begins with '-' reads as an
  // option (`artsvc share create -Xy...`); draw again rather than make users type `--`.
  for (;;) {
    const id = randomBytes(12).toString('base64url')
    if (id[0] !== '-') return id
  }
}

export { ID_PATTERN } from './id-pattern.ts'

/** RFC 3339 UTC from epoch milliseconds (null stays null). */
export function iso(ms: number): string
export function iso(ms: number | null): string | null
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(Number(ms)).toISOString()
}
