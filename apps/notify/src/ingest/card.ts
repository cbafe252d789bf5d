/**
 * Native cards, version 1: declarative content only, strictly validated. Unknown fields,
 * unsupported component types, unsafe URL schemes (links and images: http/https only),
 * images without alternative text and versions other than 1 are refused with the
 * offending path named. Bounds are in CARD_LIMITS (documented in the README).
 */
import type { Severity } from '../db/schema.ts'
import { array, fail, object, oneOf, optionalString, scalarText, string, url } from './card-check.ts'
import { type Draft, titleFrom } from './draft.ts'

export const CARD_LIMITS = {
  title: 300,
  summary: 4000,
  source: 200,
  channel: 100,
  metrics: 24,
  label: 100,
  metricValue: 100,
  rows: 100,
  rowText: 500,
  tags: 12,
  tag: 64,
  fields: 50,
  fieldValue: 2000,
  badges: 12,
  badgeText: 50,
  images: 10,
  alt: 500,
  links: 20,
  actions: 8,
  views: 8,
  viewRows: 100,
  targetName: 64,
  actionContext: 4096,
} as const

const SEVERITIES = ['info', 'success', 'warning', 'error', 'critical'] as const
const TONES = ['neutral', 'info', 'success', 'warning', 'danger'] as const
const EMPHASIS = ['normal', 'strong'] as const
const VIEW_TYPES = ['source', 'cross-list'] as const
const ACTION_TYPES = ['link', 'registered'] as const
const TOP = [
  'version',
  'channel',
  'title',
  'summary',
  'severity',
  'source',
  'metrics',
  'rows',
  'fields',
  'badges',
  'images',
  'links',
  'actions',
  'views',
] as const

export interface CardRow {
  primary: string
  secondary?: string
  tags?: string[]
  emphasis?: 'normal' | 'strong'
}

export interface Card {
  version: 1
  channel?: string
  title: string
  summary?: string
  severity: Severity
  source?: string
  metrics?: Array<{ label: string; value: string }>
  rows?: CardRow[]
  fields?: Array<{ label: string; value: string }>
  badges?: Array<{ text: string; tone: (typeof TONES)[number] }>
  images?: Array<{ url: string; alt: string }>
  links?: Array<{ label: string; url: string }>
  actions?: Array<
    // `context` is taken out (sealed, stored apart) before the card is stored: actions/card-context.ts.
    | { type: 'link'; label: string; url: string }
    | { type: 'registered'; label: string; target: string; context?: unknown }
  >
  views?: Array<{ type: (typeof VIEW_TYPES)[number]; title: string; rows: CardRow[] }>
}

function row(v: unknown, path: string): CardRow {
  const o = object(v, path, ['primary', 'secondary', 'tags', 'emphasis'], ['primary'])
  const out: CardRow = { primary: string(o.primary, `${path}.primary`, CARD_LIMITS.rowText, 1) }
  const secondary = optionalString(o.secondary, `${path}.secondary`, CARD_LIMITS.rowText)
  if (secondary !== undefined) out.secondary = secondary
  if (o.tags !== undefined) {
    out.tags = array(o.tags, `${path}.tags`, CARD_LIMITS.tags).map((t, i) =>
      string(t, `${path}.tags[${i}]`, CARD_LIMITS.tag, 1),
    )
  }
  if (o.emphasis !== undefined) out.emphasis = oneOf(o.emphasis, `${path}.emphasis`, EMPHASIS)
  return out
}

function labelled(v: unknown, path: string, max: number) {
  const o = object(v, path, ['label', 'value'], ['label', 'value'])
  return {
    label: string(o.label, `${path}.label`, CARD_LIMITS.label, 1),
    value: scalarText(o.value, `${path}.value`, max),
  }
}

function action(v: unknown, path: string): NonNullable<Card['actions']>[number] {
  const o0 = object(v, path, ['type', 'label', 'url', 'target', 'context'], ['type'])
  const type = oneOf(o0.type, `${path}.type`, ACTION_TYPES)
  if (type === 'link') {
    const o = object(v, path, ['type', 'label', 'url'], ['label', 'url'])
    return { type, label: string(o.label, `${path}.label`, CARD_LIMITS.label, 1), url: url(o.url, `${path}.url`) }
  }
  const o = object(v, path, ['type', 'label', 'target', 'context'], ['label', 'target'])
  const target = string(o.target, `${path}.target`, CARD_LIMITS.targetName, 1)
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(target)) fail(`${path}.target`, 'must be an action target name')
  const label = string(o.label, `${path}.label`, CARD_LIMITS.label, 1)
  if (o.context === undefined) return { type, label, target }
  if (JSON.stringify(o.context).length > CARD_LIMITS.actionContext) {
    fail(`${path}.context`, `must be at most ${CARD_LIMITS.actionContext} characters of JSON`)
  }
  return { type, label, target, context: o.context }
}

/** Validate an untrusted value as a version 1 card; throws invalid_card naming the path. */
export function parseCard(value: unknown): Card {
  const o = object(value, 'card', TOP, ['version', 'title'])
  if (o.version !== 1) fail('card.version', 'must be the integer 1')
  const card: Card = {
    version: 1,
    title: string(o.title, 'card.title', CARD_LIMITS.title, 1),
    severity: o.severity === undefined ? 'info' : oneOf(o.severity, 'card.severity', SEVERITIES),
  }
  if (o.title !== undefined && card.title.trim() === '') fail('card.title', 'must not be blank')
  const channel = optionalString(o.channel, 'card.channel', CARD_LIMITS.channel)
  if (channel !== undefined) card.channel = channel
  const summary = optionalString(o.summary, 'card.summary', CARD_LIMITS.summary)
  if (summary !== undefined) card.summary = summary
  const source = optionalString(o.source, 'card.source', CARD_LIMITS.source)
  if (source !== undefined) card.source = source
  const list = <T>(key: string, max: number, each: (v: unknown, path: string) => T): T[] | undefined =>
    o[key] === undefined ? undefined : array(o[key], `card.${key}`, max).map((v, i) => each(v, `card.${key}[${i}]`))
  const metrics = list('metrics', CARD_LIMITS.metrics, (v, p) => labelled(v, p, CARD_LIMITS.metricValue))
  const rows = list('rows', CARD_LIMITS.rows, row)
  const fields = list('fields', CARD_LIMITS.fields, (v, p) => labelled(v, p, CARD_LIMITS.fieldValue))
  const badges = list('badges', CARD_LIMITS.badges, (v, p) => {
    const b = object(v, p, ['text', 'tone'], ['text'])
    return {
      text: string(b.text, `${p}.text`, CARD_LIMITS.badgeText, 1),
      tone: b.tone === undefined ? ('neutral' as const) : oneOf(b.tone, `${p}.tone`, TONES),
    }
  })
  const images = list('images', CARD_LIMITS.images, (v, p) => {
    const im = object(v, p, ['url', 'alt'], ['url', 'alt'])
    const alt = string(im.alt, `${p}.alt`, CARD_LIMITS.alt, 1)
    if (alt.trim() === '') fail(`${p}.alt`, 'must describe the image')
    return { url: url(im.url, `${p}.url`), alt }
  })
  const links = list('links', CARD_LIMITS.links, (v, p) => {
    const l = object(v, p, ['label', 'url'], ['label', 'url'])
    return { label: string(l.label, `${p}.label`, CARD_LIMITS.label, 1), url: url(l.url, `${p}.url`) }
  })
  const actions = list('actions', CARD_LIMITS.actions, action)
  const views = list('views', CARD_LIMITS.views, (v, p) => {
    const w0 = object(v, p, ['type', 'title', 'rows'], ['type', 'title', 'rows'])
    return {
      type: oneOf(w0.type, `${p}.type`, VIEW_TYPES),
      title: string(w0.title, `${p}.title`, CARD_LIMITS.title, 1),
      rows: array(w0.rows, `${p}.rows`, CARD_LIMITS.viewRows).map((r, i) => row(r, `${p}.rows[${i}]`)),
    }
  })
  Object.assign(
    card,
    Object.fromEntries(
      Object.entries({ metrics, rows, fields, badges, images, links, actions, views }).filter(([, v]) => v),
    ),
  )
  return card
}

function rowText(r: CardRow): string[] {
  return [r.primary, r.secondary ?? '', ...(r.tags ?? [])]
}

export function cardDraft(card: Card): Draft {
  const parts = [
    card.title,
    card.summary,
    card.source,
    ...(card.metrics ?? []).flatMap((m) => [m.label, m.value]),
    ...(card.rows ?? []).flatMap(rowText),
    ...(card.fields ?? []).flatMap((f) => [f.label, f.value]),
    ...(card.badges ?? []).map((b) => b.text),
    ...(card.images ?? []).map((i) => i.alt),
    ...(card.links ?? []).map((l) => l.label),
    ...(card.actions ?? []).map((a) => a.label),
    ...(card.views ?? []).flatMap((v) => [v.title, ...v.rows.flatMap(rowText)]),
  ].filter((p): p is string => typeof p === 'string' && p !== '')
  return {
    kind: 'card',
    title: titleFrom(card.title, CARD_LIMITS.title),
    body: card.summary ?? '',
    source: card.source ?? null,
    username: null,
    severity: card.severity,
    content: card,
    searchParts: parts,
    requestedChannel: card.channel,
  }
}
