/**
 * Publishing the ntfy way on POST /hooks/{token}: `curl -d "disk full" <url>/hooks/<token>`
 * stores a plain message (a body that is neither JSON nor a form `payload=`), and the
 * `Title`, `Priority` and `Tags` headers (also `X-Title`/`t`, `X-Priority`/`prio`/`p`,
 * `X-Tags`/`tag`/`ta`, as ntfy accepts them) map onto the notification:
 *   Title    -> the title (one line, 200 characters at most)
 *   Priority -> the severity: 5/max/urgent = critical, 4/high = error, 3/default, 2/low and
 *               1/min = info
 *   Tags     -> comma-separated, kept with the content and searchable; without a Priority, a
 *               tag naming a severity (info, success, warning, error, critical) sets it
 * The headers apply to JSON compatibility payloads too (Title replaces the derived title).
 */
import type { Severity } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { type Draft, titleFrom } from './draft.ts'
import { messageDraft, parseMessage } from './message.ts'

type Headers = Record<string, string | string[] | undefined>

const PRIORITIES: Record<string, Severity> = {
  '5': 'critical',
  max: 'critical',
  urgent: 'critical',
  '4': 'error',
  high: 'error',
  '3': 'info',
  default: 'info',
  '2': 'info',
  low: 'info',
  '1': 'info',
  min: 'info',
}
const SEVERITIES: readonly Severity[] = ['info', 'success', 'warning', 'error', 'critical']
export const NTFY_LIMITS = { tags: 20, tag: 100 } as const

function header(headers: Headers, names: string[]): string | undefined {
  for (const name of names) {
    const v = headers[name]
    const s = Array.isArray(v) ? v[0] : v
    if (s !== undefined && s.trim() !== '') return s.trim()
  }
  return undefined
}

/** True when a hook body is a plain message rather than a JSON or `payload=` form payload. */
export function isPlainBody(contentType: string | undefined, body: string): boolean {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  if (type === 'application/json' || type === 'multipart/form-data') return false
  if (body.trimStart().startsWith('{')) return false
  if (type === 'application/x-www-form-urlencoded') return !new URLSearchParams(body).has('payload')
  // Mattermost documents `payload=...` sent with no (or another) content type: the form, as
  // decodeCompatBody reads it, not a message whose text is the encoded form.
  return !/^payload=/.test(body)
}

/** A plain hook body as a message draft (same limits as POST /api/v1/messages). */
export function plainDraft(body: string): Draft {
  return messageDraft(parseMessage('text/plain', body))
}

/** Apply the ntfy-style headers to a draft, or throw invalid_payload naming what is allowed. */
export function withPublishHeaders(draft: Draft, headers: Headers): Draft {
  const title = header(headers, ['title', 'x-title', 't'])
  const priority = header(headers, ['priority', 'x-priority', 'prio', 'p'])?.toLowerCase()
  const tagsText = header(headers, ['tags', 'x-tags', 'tag', 'ta'])
  if (title === undefined && priority === undefined && tagsText === undefined) return draft
  let severity = draft.severity
  if (priority !== undefined) {
    // Own keys only: `Priority: constructor` must not find Object.prototype's.
    const s = Object.hasOwn(PRIORITIES, priority) ? PRIORITIES[priority] : undefined
    if (!s) throw errors.invalid_payload('Priority must be one of 1, 2, 3, 4, 5, min, low, default, high, urgent, max')
    severity = s
  }
  const tags = (tagsText ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '')
  if (tags.length > NTFY_LIMITS.tags) throw errors.invalid_payload(`Tags must list at most ${NTFY_LIMITS.tags} tags`)
  if (tags.some((t) => t.length > NTFY_LIMITS.tag)) {
    throw errors.invalid_payload(`each tag in Tags must be at most ${NTFY_LIMITS.tag} characters`)
  }
  if (priority === undefined) {
    const named = SEVERITIES.filter((s) => tags.includes(s))
    if (named.length > 0) severity = named.at(-1)!
  }
  const content =
    tags.length > 0 && draft.content && typeof draft.content === 'object'
      ? { ...(draft.content as Record<string, unknown>), tags }
      : draft.content
  return {
    ...draft,
    ...(title !== undefined ? { title: titleFrom(title) } : {}),
    severity,
    content,
    searchParts: [...draft.searchParts, ...(title !== undefined ? [title] : []), ...tags],
  }
}
