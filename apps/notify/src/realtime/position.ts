/**
 * A position in the realtime stream: the last notification id and the last change id a
 * reader has been sent. On the wire (SSE `id:`, `Last-Event-ID`) it is `N-M`, for example
 * `1523-87`. Both parts only grow, so "after N-M" means notifications with id > N and
 * changes with id > M.
 */
import { errors } from '../errors.ts'

export interface Position {
  n: number
  c: number
}

const POSITION = /^(\d{1,15})-(\d{1,15})$/

export function formatPosition(p: Position): string {
  return `${p.n}-${p.c}`
}

/** Parse an event id sent by the stream; a 400 for anything else. */
export function parsePosition(text: string): Position {
  const m = POSITION.exec(text.trim())
  if (!m) throw errors.invalid_stream_position()
  return { n: Number(m[1]), c: Number(m[2]) }
}
