/**
 * HTTP byte ranges on the content origin (RFC 9110 §14): one range of a file that is not HTML
 * (HTML gets the storage shim inserted, so its bytes are not the stored ones), so a video in a
 * published site can seek and Safari plays it. Several ranges, a range that does not parse, or
 * an `If-Range` naming another version are answered with the whole file (200), as the RFC allows.
 */
import type { ByteRange } from '../storage/blob-store.ts'

export type RangeAnswer = ByteRange | 'unsatisfiable' | undefined

const SINGLE = /^bytes=(\d*)-(\d*)$/

/**
 * What a GET with these headers gets of a file of `size` bytes whose entity tag is `etag`:
 * a range, `unsatisfiable` (416), or undefined (the whole file).
 */
export function requestedRange(
  range: string | undefined,
  ifRange: string | undefined,
  size: number,
  etag: string,
): RangeAnswer {
  if (range === undefined) return undefined
  // A range of another version (a weak or different tag, or a date) is not this file's.
  if (ifRange !== undefined && ifRange !== etag) return undefined
  const m = SINGLE.exec(range.trim())
  if (!m) return undefined
  const [, first, last] = m as unknown as [string, string, string]
  if (first === '' && last === '') return undefined
  if (first === '') {
    // The last `last` bytes.
    const n = Number(last)
    if (n === 0 || size === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - n), end: size - 1 }
  }
  const start = Number(first)
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1)
  if (last !== '' && Number(last) < start) return undefined
  if (start >= size) return 'unsatisfiable'
  return { start, end }
}
