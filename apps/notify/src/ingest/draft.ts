/**
 * What every ingestion path produces before storage: a channel request (an override the
 * hook policy may refuse) and the notification's display and search content.
 */
import type { NotificationKind, Severity } from '../db/schema.ts'

export interface Draft {
  kind: NotificationKind
  title: string
  body: string
  source: string | null
  username: string | null
  severity: Severity
  /** JSON-serialisable stored content (the card, or kept attachments). */
  content: unknown
  /** Every searchable text (the channel name is added at storage time). */
  searchParts: string[]
  /** The channel the payload asked for, if any. */
  requestedChannel: string | undefined
}

/** Collapse whitespace and cap a one-line title. */
export function titleFrom(text: string, max = 200): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** The lower-cased search document; capped so one notification cannot bloat the index. */
export function searchText(parts: Array<string | null | undefined>, max = 64 * 1024): string {
  // Senders repeat themselves (Slack's fallback usually holds the title): a text that is
  // part of another one adds no substring to the document, so it is indexed once.
  const unique = new Set<string>()
  for (const p of parts) if (typeof p === 'string' && p.trim() !== '') unique.add(p.trim().toLowerCase())
  const list = [...unique]
  // Bounded work: the containment check runs on ordinary-sized notifications only. The
  // first part (the channel name) always stays first, whole.
  const size = list.reduce((n, p) => n + p.length, 0)
  const kept =
    list.length > 64 || size > 16 * 1024
      ? list
      : list.filter((p, i) => i === 0 || !list.some((q, j) => j !== i && q.length > p.length && q.includes(p)))
  const text = kept.join('\n')
  return text.length > max ? text.slice(0, max) : text
}

export function isSafeUrl(value: string): boolean {
  if (value.length > 2048) return false
  try {
    const u = new URL(value)
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== ''
  } catch {
    return false
  }
}
