/**
 * Compatibility webhook payloads (Slack/Mattermost incoming-webhook style) as real senders
 * emit them: Alertmanager's Slack receiver, Grafana's Slack contact point, GitLab's
 * Mattermost/Slack integrations, shell scripts.
 *
 * Accepted bodies: JSON (`application/json`, or no/any content type when the body is a
 * JSON object), or form-encoded `payload=<json>` (`application/x-www-form-urlencoded`, or
 * no/any other content type when the body starts with `payload=`, as Mattermost reads it).
 * Tolerant by design: unknown top-level fields are ignored (senders add `icon_emoji`,
 * `link_names`, `mrkdwn`, ...), raw newlines inside strings are accepted, and attachment
 * fields we do not keep are dropped. Kept attachment text is stored and searchable.
 * Strict where a sender's mistake would otherwise be stored wrongly: a text field that is
 * not a string (`{"text": 12345}`, `true`) is refused (attachment field values may be
 * numbers, as Grafana sends them), and so is a link, image or action URL that
 * is not an absolute http(s) URL (`javascript:`, `data:`, `vbscript:`), as in cards (an
 * empty string counts as absent: templating tools emit it). A payload with neither text
 * nor attachment/block text is refused.
 */

import { kitErrors } from '@gatehouse/kit/errors.ts'
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
/** URLs a sender may put in an attachment that we do not keep, but still refuse when unsafe. */
const CHECKED_URL_KEYS = ['image_url', 'thumb_url', 'author_icon', 'footer_icon'] as const

/** Decode the body into a JSON object (form `payload=` or JSON), or throw invalid_payload. */
export function decodeCompatBody(contentType: string | undefined, body: string): Record<string, unknown> {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  let json = body
  const form = type === 'application/x-www-form-urlencoded' || (type !== 'application/json' && /^payload=/.test(body))
  if (form && !body.trimStart().startsWith('{')) {
    const payload = new URLSearchParams(body).get('payload')
    if (payload === null) throw errors.invalid_payload('form body has no payload field')
    json = payload
  } else if (type === 'multipart/form-data') {
    throw errors.invalid_payload('multipart bodies are not supported; send JSON or payload=<json>')
  }
  let value: unknown
  try {
    value = parseLenientJson(json, 'payload')
  } catch (err) {
    // The same code as every other endpoint's unparseable body (the kit's).
    if (err instanceof JsonError) throw kitErrors.invalid_json(err.message)
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
  if (typeof v !== 'string') throw errors.invalid_payload(`${where}${key} must be a string`)
  if (v.length > max) throw errors.invalid_payload(`${where}${key} is longer than ${max} characters`)
  return v
}

/** A field title or value: text, or a finite number kept as text (Grafana sends `"value": 812.4`). */
function fieldText(obj: Record<string, unknown>, key: string, where: string): string | undefined {
  const v = obj[key]
  if (typeof v === 'number' && Number.isFinite(v)) return String(v)
  return optionalString(obj, key, COMPAT_LIMITS.attachmentText, where)
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
    const v = checkedUrl(a[key], `${where}${key}`)
    if (v) kept[key] = v
  }
  for (const key of CHECKED_URL_KEYS) checkedUrl(a[key], `${where}${key}`)
  if (a.actions !== undefined && a.actions !== null) {
    if (!Array.isArray(a.actions)) throw errors.invalid_payload(`${where}actions must be an array`)
    a.actions.forEach((action, j) => {
      if (action === null || typeof action !== 'object') return
      const o = action as Record<string, unknown>
      checkedUrl(o.url, `${where}actions[${j}].url`)
      const integration = o.integration
      if (integration && typeof integration === 'object') {
        checkedUrl((integration as Record<string, unknown>).url, `${where}actions[${j}].integration.url`)
      }
    })
  }
  if (Array.isArray(a.fields)) {
    if (a.fields.length > COMPAT_LIMITS.fields) {
      throw errors.invalid_payload(`${where}fields has more than ${COMPAT_LIMITS.fields} entries`)
    }
    const fields: KeptField[] = []
    a.fields.forEach((f, j) => {
      if (f === null || typeof f !== 'object' || Array.isArray(f)) return
      const fw = `${where}fields[${j}].`
      const title = fieldText(f as Record<string, unknown>, 'title', fw) ?? ''
      const value = fieldText(f as Record<string, unknown>, 'value', fw) ?? ''
      if (title || value) fields.push({ title, value, short: (f as Record<string, unknown>).short === true })
    })
    if (fields.length > 0) kept.fields = fields
  }
  return Object.keys(kept).length > 0 ? kept : undefined
}

/** An absolute http(s) URL, or undefined when absent or empty; anything else is refused. */
function checkedUrl(v: unknown, path: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined
  if (typeof v !== 'string' || !isSafeUrl(v)) {
    throw errors.invalid_payload(`${path} must be an absolute http or https URL`)
  }
  return v
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
