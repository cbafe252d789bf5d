/**
 * Property tests for every parser of outside input: never a crash or a hang, always
 * either a result or a coded 4xx error.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AppError } from '@gatehouse/kit'
import fc from 'fast-check'
import { decodeCursor, encodeCursor } from '../src/inbox/cursor.ts'
import { MAX_TERMS, searchTerms } from '../src/inbox/search.ts'
import { cardDraft, parseCard } from '../src/ingest/card.ts'
import { blocksText, compatDraft, decodeCompatBody } from '../src/ingest/compat.ts'
import { escapeControlCharsInStrings, parseLenientJson } from '../src/ingest/lenient-json.ts'
import { parseMessage } from '../src/ingest/message.ts'

/** Run `fn`; it may return or throw a coded 4xx AppError, nothing else. */
function total(fn: () => unknown) {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof AppError, `unexpected ${String(err)}`)
    assert.ok(err.statusCode >= 400 && err.statusCode < 500)
    assert.match(err.code, /^[a-z_]+$/)
  }
}

const contentTypes = fc.constantFrom(
  undefined,
  'application/json',
  'application/x-www-form-urlencoded',
  'text/plain',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-8',
)

const validCard = fc.record({
  version: fc.constant(1),
  title: fc.string({ minLength: 1, maxLength: 50 }).filter((s) => s.trim() !== ''),
  rows: fc.array(
    fc.record({
      primary: fc.string({ minLength: 1, maxLength: 20 }),
      tags: fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 3 }),
    }),
    { maxLength: 3 },
  ),
  links: fc.array(fc.record({ label: fc.string({ minLength: 1, maxLength: 10 }), url: fc.webUrl() }), { maxLength: 3 }),
})

test('lenient JSON: strict JSON parses the same; raw control characters in strings are tolerated', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const text = JSON.stringify(v)
      assert.deepEqual(parseLenientJson(text), JSON.parse(text))
      assert.equal(escapeControlCharsInStrings(text), text)
    }),
  )
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom('a', '\n', '\t', '\r', '\u0001', '"', '\\', 'é') }), (s) => {
      // A string value written with raw control characters (as shell scripts do).
      const raw = `{"text": "${JSON.stringify(s).slice(1, -1).replace(/\\n/g, '\n').replace(/\\t/g, '\t')}"}`
      assert.deepEqual(parseLenientJson(raw), { text: s })
    }),
  )
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (s) =>
      total(() => {
        try {
          parseLenientJson(s)
        } catch (err) {
          assert.equal((err as Error).name, 'JsonError')
        }
      }),
    ),
  )
})

test('compatibility payloads: arbitrary bodies and objects never crash', () => {
  fc.assert(
    fc.property(contentTypes, fc.string({ maxLength: 500 }), (type, body) =>
      total(() => compatDraft(decodeCompatBody(type, body))),
    ),
  )
  fc.assert(
    fc.property(
      fc.dictionary(
        fc.constantFrom('text', 'username', 'channel', 'attachments', 'blocks', 'props', 'icon_url', 'x'),
        fc.jsonValue({ maxDepth: 4 }),
      ),
      (obj) => total(() => compatDraft(obj as Record<string, unknown>)),
    ),
  )
  fc.assert(
    fc.property(
      fc.array(
        fc.record(
          {
            text: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
            title_link: fc.oneof(fc.webUrl(), fc.string()),
            color: fc.string({ maxLength: 10 }),
            fields: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 5 },
      ),
      (attachments) =>
        total(() => {
          const d = compatDraft({ text: 'x', attachments })
          for (const a of (d.content as { attachments: Array<{ title_link?: string }> }).attachments) {
            if (a.title_link) assert.match(a.title_link, /^https?:/)
          }
        }),
    ),
  )
  // Deeply nested blocks are bounded, not recursed without limit.
  let deep: unknown = { type: 'mrkdwn', text: 'leaf' }
  for (let i = 0; i < 10_000; i++) deep = { elements: [deep] }
  assert.equal(blocksText([deep]), '')
})

test('native cards: valid cards parse and index; mutated cards fail with a named path', () => {
  fc.assert(
    fc.property(validCard, (c) => {
      const card = parseCard(c)
      const draft = cardDraft(card)
      assert.equal(draft.title.length > 0, true)
    }),
  )
  fc.assert(
    fc.property(
      validCard,
      fc.string({ minLength: 1, maxLength: 8 }),
      fc.jsonValue({ maxDepth: 2 }),
      (c, key, value) => {
        try {
          parseCard({ ...c, [key]: value })
        } catch (err) {
          assert.ok(err instanceof AppError)
          assert.equal(err.code, 'invalid_card')
          assert.match(err.message, /^card[.[]?/)
        }
      },
    ),
  )
  fc.assert(fc.property(fc.jsonValue({ maxDepth: 4 }), (v) => total(() => parseCard(v))))
  fc.assert(
    fc.property(fc.string({ maxLength: 40 }), (scheme) => {
      const u = `${scheme}:alert(1)`
      try {
        parseCard({ version: 1, title: 't', links: [{ label: 'l', url: u }] })
        assert.match(u, /^https?:/i)
      } catch (err) {
        assert.equal((err as AppError).code, 'invalid_card')
      }
    }),
  )
})

test('generic messages, cursors and search terms', () => {
  fc.assert(fc.property(contentTypes, fc.string({ maxLength: 300 }), (t, b) => total(() => parseMessage(t, b))))
  fc.assert(fc.property(fc.string({ maxLength: 80 }), (s) => total(() => decodeCursor(s))))
  fc.assert(
    fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (id) =>
      assert.equal(decodeCursor(encodeCursor(id)), id),
    ),
  )
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (q) => {
      const terms = searchTerms(q)
      assert.ok(terms.length <= MAX_TERMS)
      for (const t of terms) assert.equal(t, t.toLowerCase())
    }),
  )
})
