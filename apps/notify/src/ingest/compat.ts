/**
 * Compatibility webhook payloads (Slack/Mattermost incoming-webhook style) as real senders
 * emit them: Alertmanager's Slack receiver, Grafana's Slack contact point, GitLab's
 * Mattermost/Slack integrations, shell scripts.
 *
 * Accepted bodies: JSON (`application/json`, or no/any content type when the body is a
 * JSON object), or form-encoded `payload=<json>` (`application/x-www-form-urlencoded`).
 * Tolerant by design: unknown top-level fields are ignored (senders add `icon_emoji`,
 * `link_names`, `mrkdwn`, ...), raw newlines inside strings are accepted, and attachment
 * fields we do not keep are dropped. Kept attachment text is stored and searchable.
 * Links in attachments are kept only when they are http(s); other schemes are dropped.
 * A payload with neither text nor attachment/block text is refused.
 */
import { errors } from '../errors.ts'
import { type Draft, isSafeUrl, titleFrom } from './draft.ts'
import { JsonError, parseLenientJson } from './lenient-json.ts'

export const COMPAT_LIMITS = {
  text: 40_000,
  username: 100,
  channel: 100,
  attachments: 50,
  attachmentText: 8_000,
  fields: 50,
  blockText: 40_000,
} as const

export interface KeptField {
  title: string
  value: string
  short: boolean
}

export interface KeptAttachment {
  fallback?: string
  color?: string
  pretext?: string
  author_name?: string
  author_link?: string
  title?: string
  title_link?: string
  text?: string
  fields?: KeptField[]
  footer?: string
}

export interface CompatContent {
  text: string
  attachments: KeptAttachment[]
  blocks_text?: string
}

const TEXT_KEYS = ['fallback', 'pretext', 'author_name', 'title', 'text', 'footer'] as const
const LINK_KEYS = ['author_link', 'title_link'] as const

/** Decode the body into a JSON object (form `payload=` or JSON), or throw invalid_payload. */
export function decodeCompatBody(contentType: string | undefined, body: string): Record<string, unknown> {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  let json = body
  if (type === 'application/x-www-form-urlencoded' && !body.trimStart().startsWith('{')) {
    const payload = new URLSearchParams(body).get('payload')
    if (payload === null) throw errors.invalid_payload('form body has no payload field')
    json = payload
  } else if (type === 'multipart/form-data') {
    throw errors.invalid_payload('multipart bodies are not supported; send JSON or payload=<json>')
  }
  let value: unknown
  try {
    value = parseLenientJson(json)
  } catch (err) {
    if (err instanceof JsonError) throw errors.invalid_payload(`body is not valid JSON: ${err.message}`)
    throw err
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw errors.invalid_payload('payload must be a JSON object')
  }
  return value as Record<string, unknown>
}

function optionalString(obj: Record<string, unknown>, key: string, max: number, where: string): string | undefined {
  const v = obj[key]
  if (v === undefined || v === null) return undefined
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  if (typeof v !== 'string') throw errors.invalid_payload(`${where}${key} must be a string`)
  if (v.length > max) throw errors.invalid_payload(`${where}${key} is longer than ${max} characters`)
  return v
}

function keepAttachment(raw: unknown, i: number): KeptAttachment | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw errors.invalid_payload(`attachments[${i}] must be an object`)
  }
  const a = raw as Record<string, unknown>
  const where = `attachments[${i}].`
  const kept: KeptAttachment = {}
  for (const key of TEXT_KEYS) {
    const v = optionalString(a, key, COMPAT_LIMITS.attachmentText, where)
    if (v) kept[key] = v
  }
  const color = optionalString(a, 'color', 32, where)
  if (color) kept.color = color
  for (const key of LINK_KEYS) {
    const v = typeof a[key] === 'string' ? (a[key] as string) : undefined
    if (v && isSafeUrl(v)) kept[key] = v
  }
  if (Array.isArray(a.fields)) {
    if (a.fields.length > COMPAT_LIMITS.fields) {
      throw errors.invalid_payload(`${where}fields has more than ${COMPAT_LIMITS.fields} entries`)
    }
    const fields: KeptField[] = []
    a.fields.forEach((f, j) => {
      if (f === null || typeof f !== 'object' || Array.isArray(f)) return
      const fw = `${where}fields[${j}].`
      const title = optionalString(f as Record<string, unknown>, 'title', COMPAT_LIMITS.attachmentText, fw) ?? ''
      const value = optionalString(f as Record<string, unknown>, 'value', COMPAT_LIMITS.attachmentText, fw) ?? ''
      if (title || value) fields.push({ title, value, short: (f as Record<string, unknown>).short === true })
    })
    if (fields.length > 0) kept.fields = fields
  }
  return Object.keys(kept).length > 0 ? kept : undefined
}

/** Text of Slack Block Kit blocks (section/header/context text and fields), depth- and size-bounded. */
export function blocksText(blocks: unknown): string {
  const out: string[] = []
  let size = 0
  const walk = (node: unknown, depth: number) => {
    if (depth > 8 || size > COMPAT_LIMITS.blockText) return
    if (Array.isArray(node)) {
      for (const n of node.slice(0, 100)) walk(n, depth + 1)
      return
    }
    if (node === null || typeof node !== 'object') return
    const o = node as Record<string, unknown>
    if (typeof o.text === 'string' && (o.type === 'mrkdwn' || o.type === 'plain_text')) {
      out.push(o.text)
      size += o.text.length
    }
    for (const key of ['text', 'fields', 'elements', 'blocks']) if (key in o) walk(o[key], depth + 1)
  }
  walk(blocks, 0)
  const text = out.join('\n')
  return text.length > COMPAT_LIMITS.blockText ? text.slice(0, COMPAT_LIMITS.blockText) : text
}

/** Severity from the attachment colour senders use for state (danger/warning/good or a red/amber/green hex). */
export function severityFromColor(color: string | undefined): Draft['severity'] {
  if (!color) return 'info'
  const c = color.toLowerCase()
  if (c === 'danger') return 'error'
  if (c === 'warning') return 'warning'
  if (c === 'good') return 'success'
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/.exec(c)
  if (!m) return 'info'
  const [r, g, b] = [m[1], m[2], m[3]].map((h) => Number.parseInt(h!, 16)) as [number, number, number]
  if (r > 150 && g < 110 && b < 110) return 'error'
  if (r > 180 && g > 120 && b < 90) return 'warning'
  if (g > 120 && r < 120 && b < 130) return 'success'
  return 'info'
}

/** Turn a decoded compatibility payload into a draft, or throw invalid_payload. */
export function compatDraft(payload: Record<string, unknown>): Draft {
  const text = optionalString(payload, 'text', COMPAT_LIMITS.text, '') ?? ''
  const username = optionalString(payload, 'username', COMPAT_LIMITS.username, '') ?? null
  const channel = optionalString(payload, 'channel', COMPAT_LIMITS.channel, '')
  let rawAttachments = payload.attachments
  // Mattermost also accepts attachments under props.
  if (rawAttachments === undefined && payload.props && typeof payload.props === 'object') {
    rawAttachments = (payload.props as Record<string, unknown>).attachments
  }
  if (rawAttachments !== undefined && rawAttachments !== null && !Array.isArray(rawAttachments)) {
    throw errors.invalid_payload('attachments must be an array')
  }
  const list = (rawAttachments as unknown[] | undefined) ?? []
  if (list.length > COMPAT_LIMITS.attachments) {
    throw errors.invalid_payload(`attachments has more than ${COMPAT_LIMITS.attachments} entries`)
  }
  const attachments = list.map(keepAttachment).filter((a): a is KeptAttachment => a !== undefined)
  const blocks = payload.blocks === undefined ? '' : blocksText(payload.blocks)
  const attachmentParts = attachments.flatMap((a) => [
    ...TEXT_KEYS.map((k) => a[k]),
    ...(a.fields ?? []).flatMap((f) => [f.title, f.value]),
  ])
  if (text.trim() === '' && blocks.trim() === '' && !attachmentParts.some((p) => p && p.trim() !== '')) {
    throw errors.invalid_payload('payload has no text, attachment text or block text')
  }
  const first = attachments[0]
  const titleSource = text.trim() || first?.title || first?.pretext || first?.fallback || first?.text || blocks
  const content: CompatContent = { text, attachments, ...(blocks ? { blocks_text: blocks } : {}) }
  const worst = attachments.map((a) => severityFromColor(a.color))
  const severity = (['critical', 'error', 'warning', 'success'] as const).find((s) => worst.includes(s)) ?? 'info'
  return {
    kind: 'compat',
    title: titleFrom(titleSource ?? ''),
    body: text,
    source: username,
    username,
    severity,
    content,
    searchParts: [text, username ?? undefined, blocks, ...attachmentParts].filter((p): p is string => !!p),
    requestedChannel: channel,
  }
}
