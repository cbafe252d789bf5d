/**
 * Generic messages (POST /api/v1/messages): a text/plain body, or JSON {text, source}
 * with any other field refused.
 */

import { kitErrors } from '@gatehouse/kit/errors.ts'
import { errors } from '../errors.ts'
import { type Draft, titleFrom } from './draft.ts'
import { JsonError, parseLenientJson } from './lenient-json.ts'

export const MESSAGE_LIMITS = { text: 40_000, source: 200 } as const

export function parseMessage(contentType: string | undefined, body: string): { text: string; source?: string } {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  if (type === 'text/plain' || type === '') return { text: checkText(body) }
  if (type !== 'application/json') {
    throw errors.invalid_message('send text/plain or application/json')
  }
  let value: unknown
  try {
    value = parseLenientJson(body)
  } catch (err) {
    // The same code as every other endpoint's unparseable body (the kit's).
    if (err instanceof JsonError) throw kitErrors.invalid_json(err.message)
    throw err
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw errors.invalid_message('JSON body must be an object {text, source}')
  }
  const o = value as Record<string, unknown>
  for (const key of Object.keys(o)) {
    if (key !== 'text' && key !== 'source') throw errors.invalid_message(`unknown field ${JSON.stringify(key)}`)
  }
  if (typeof o.text !== 'string') throw errors.invalid_message('text is required and must be a string')
  const out: { text: string; source?: string } = { text: checkText(o.text) }
  if (o.source !== undefined) {
    if (typeof o.source !== 'string') throw errors.invalid_message('source must be a string')
    if (o.source.length > MESSAGE_LIMITS.source) {
      throw errors.invalid_message(`source must be at most ${MESSAGE_LIMITS.source} characters`)
    }
    out.source = o.source
  }
  return out
}

function checkText(text: string): string {
  if (text.trim() === '') throw errors.invalid_message('text must not be empty')
  if (text.length > MESSAGE_LIMITS.text)
    throw errors.invalid_message(`text must be at most ${MESSAGE_LIMITS.text} characters`)
  return text
}

export function messageDraft(m: { text: string; source?: string }): Draft {
  return {
    kind: 'message',
    title: titleFrom(m.text),
    body: m.text,
    source: m.source ?? null,
    username: null,
    severity: 'info',
    content: { text: m.text },
    searchParts: [m.text, m.source ?? ''],
    requestedChannel: undefined,
  }
}
