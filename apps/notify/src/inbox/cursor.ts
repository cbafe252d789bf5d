/**
 * Opaque pagination cursors. Pages are ordered by notification id, newest first; a cursor
 * is the last id of a page, so later pages never repeat or skip an item, however many
 * notifications arrive in between (new ones only ever get larger ids).
 */
import { errors } from '../errors.ts'

const PREFIX = 'n1:'

export function encodeCursor(id: number): string {
  return Buffer.from(`${PREFIX}${id}`, 'utf8').toString('base64url')
}

export function decodeCursor(cursor: string): number {
  if (cursor.length > 64 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw errors.invalid_cursor()
  const text = Buffer.from(cursor, 'base64url').toString('utf8')
  if (!text.startsWith(PREFIX)) throw errors.invalid_cursor()
  const digits = text.slice(PREFIX.length)
  if (!/^[1-9][0-9]{0,15}$/.test(digits)) throw errors.invalid_cursor()
  const id = Number(digits)
  if (!Number.isSafeInteger(id)) throw errors.invalid_cursor()
  return id
}
