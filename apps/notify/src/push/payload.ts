/**
 * What a push carries (the spec leaves the format to us; README "Push notifications"):
 * one JSON object the service worker shows as a system notification.
 *
 *   {v:1, id, channel, title, body, severity, source, created_at, url, truncated?}
 *
 * Only what the inbox already shows the reader: no webhook ids, tokens, action targets or
 * card internals. A push service must accept 4,096-byte messages (RFC 8030 section 7.2);
 * aes128gcm adds 86 bytes of header, one padding delimiter and a 16-byte tag, which
 * leaves 3,993 bytes of plaintext. Larger cards send a summary (title, the start of the
 * text) and the link that opens the full item.
 */
import type { Urgency } from 'web-push'
import type { NotificationRow, PushMode, Severity } from '../db/schema.ts'
import type { HeldSummary } from './budget.ts'

/** Largest plaintext in one aes128gcm record of 4,096 bytes (4096 - 86 - 1 - 16). */
export const MAX_PUSH_PAYLOAD = 3993

/** Text of the body shown on a lock screen: longer text is cut (the link opens the whole item). */
const BODY_CHARS = 1000

export type PushSource = Pick<
  NotificationRow,
  'id' | 'channel' | 'kind' | 'title' | 'body' | 'source' | 'severity' | 'content' | 'created_at'
>

export interface PushMessage {
  v: 1
  id: number
  channel: string
  title: string
  body: string
  severity: Severity
  source: string | null
  created_at: string
  /** Opens the item in the web client (relative to the service's origin). */
  url: string
  /** Set when the title or text was cut to fit. */
  truncated?: true
}

/** RFC 8030 section 5.3: how soon the push service should wake the device. */
export function urgencyOf(severity: Severity): Urgency {
  if (severity === 'critical' || severity === 'error') return 'high'
  if (severity === 'warning') return 'normal'
  return 'low'
}

/** Whether a reader's per-channel choice lets this severity through. */
export function modeAllows(mode: PushMode, severity: Severity): boolean {
  if (mode === 'off') return false
  if (mode === 'important') return severity === 'warning' || severity === 'error' || severity === 'critical'
  return true
}

/**
 * Compatibility text is Slack/Mattermost markdown; a system notification shows plain text:
 * link labels instead of `<url|label>` and `[label](url)`, and no emphasis markers.
 */
export function plainFromMarkdown(text: string): string {
  return text
    .replace(/<(https?:\/\/[^|>\s]+)\|([^>\n]+)>/g, '$2')
    .replace(/<(https?:\/\/[^|>\s]+)>/g, '$1')
    .replace(/\[([^\]\n]+)\]\(((?:[^()\s]|\([^()\s]*\))+)\)/g, '$1')
    .replace(/```/g, '')
    .replace(/(\*\*|~~|`)([^\n]+?)\1/g, '$2')
}

function summaryText(n: PushSource): string {
  if (n.kind === 'card') {
    try {
      const card = JSON.parse(n.content) as { summary?: unknown }
      if (typeof card.summary === 'string') return card.summary
    } catch {
      // stored content is always JSON; fall back to the indexed body below
    }
  }
  return n.kind === 'compat' ? plainFromMarkdown(n.body) : n.body
}

function cut(text: string, chars: number): string {
  const points = [...text]
  return points.length <= chars ? text : `${points.slice(0, Math.max(0, chars - 1)).join('')}…`
}

/** Channels a summary push names; the rest are counted. */
const SUMMARY_CHANNELS = 20

/**
 * The push that stands for notifications held past a browser's budget (budget.ts): how many,
 * by channel, at the highest severity among them; it opens the inbox. Marked `summary: true`
 * (the service worker shows each summary in place of the last one).
 */
export function summaryPayload(s: HeldSummary, now: string): string {
  const named = s.channels.slice(0, SUMMARY_CHANNELS).map((c) => `#${c.channel} ${c.count}`)
  const others = s.channels.length - named.length
  return JSON.stringify({
    v: 1,
    summary: true,
    count: s.count,
    title: `${s.count} more notification${s.count === 1 ? '' : 's'}`,
    body: cut([...named, ...(others > 0 ? [`${others} more channels`] : [])].join(', '), BODY_CHARS),
    severity: s.severity,
    created_at: now,
    url: '/',
  })
}

/** The push message for a notification, as JSON under MAX_PUSH_PAYLOAD bytes. */
export function pushPayload(n: PushSource): string {
  const text = summaryText(n)
  const msg: PushMessage = {
    v: 1,
    id: Number(n.id),
    channel: n.channel,
    title:
      (n.kind === 'compat' ? plainFromMarkdown(n.body.split('\n', 1)[0] ?? '').slice(0, 120) : n.title) ||
      n.title ||
      `#${n.channel}`,
    body: cut(text, BODY_CHARS),
    severity: n.severity,
    source: n.source,
    created_at: n.created_at,
    url: `/?notification=${Number(n.id)}`,
  }
  if (msg.body !== text) msg.truncated = true
  let json = JSON.stringify(msg)
  // Multi-byte text (or JSON escapes) can still exceed the limit: shorten until it fits.
  for (let chars = BODY_CHARS; Buffer.byteLength(json) > MAX_PUSH_PAYLOAD; chars = Math.floor(chars * 0.75)) {
    msg.truncated = true
    msg.body = cut(text, chars)
    if (chars < 16) {
      msg.body = ''
      msg.title = cut(msg.title, 60)
      msg.source = msg.source === null ? null : cut(msg.source, 60)
    }
    json = JSON.stringify(msg)
    if (chars === 0) break
  }
  return json
}
