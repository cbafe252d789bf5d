/**
 * The web client's markdown subset (web/markdown.js) in Debian's Chromium, as a property
 * test: for any text (fast-check strings built from markdown and HTML fragments), rendering
 * never throws, creates only the subset's elements, links only http(s) URLs (opened with
 * rel="noopener noreferrer"), and keeps every character of the input that is not markup.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { sharedBrowser } from './browser.ts'
import { backends, startNotify } from './helpers.ts'

const pieces = fc.constantFrom(
  '**',
  '*',
  '_',
  '~~',
  '`',
  '```',
  '\n',
  '> ',
  '- ',
  '1. ',
  '# ',
  '[',
  '](',
  ')',
  '<',
  '>',
  '|',
  'http://a.example/x',
  'https://b.example/(y)',
  'javascript:alert(1)',
  'data:text/html,x',
  '<img src=x onerror=alert(1)>',
  '<script>alert(1)</script>',
  '&lt;',
  'é€😀',
  ' ',
  'word',
)
const texts = fc.oneof(
  fc.array(pieces, { maxLength: 40 }).map((a) => a.join('')),
  fc.string({ maxLength: 200, unit: 'grapheme' }),
)

const ALLOWED = ['P', 'BR', 'STRONG', 'EM', 'DEL', 'CODE', 'PRE', 'A', 'UL', 'OL', 'LI', 'BLOCKQUOTE', 'DIV']

test('markdown rendering: only the subset, only safe links, never a crash', async (t) => {
  const sqlite = backends.find((b) => b.name === 'sqlite')
  assert.ok(sqlite)
  const n = await startNotify(sqlite)
  t.after(() => n.close())
  const page = await (await sharedBrowser()).newPage()
  t.after(() => page.close())
  const problems: string[] = []
  page.on('pageerror', (e) => problems.push(String(e)))
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`)
    void d.dismiss()
  })
  // The manifest route answers without signing in; any same-origin page will do.
  await page.goto(`${n.base}/manifest.webmanifest`)
  const samples = fc.sample(texts, { numRuns: 400, seed: 20261125 })
  const results = await page.evaluate(async (inputs) => {
    const module = '/markdown.js' // served by notify; a variable keeps tsc from resolving it
    const { markdown } = await import(module)
    return inputs.map((text: string) => {
      try {
        const box = document.createElement('div')
        box.append(...markdown(text))
        const elements = [...box.querySelectorAll('*')]
        return {
          tags: [...new Set(elements.map((e) => e.tagName))],
          attrs: [...new Set(elements.flatMap((e) => [...e.attributes].map((a) => `${e.tagName}.${a.name}`)))],
          links: [...box.querySelectorAll('a')].map((a) => ({ href: a.getAttribute('href'), rel: a.rel })),
          text: box.textContent ?? '',
        }
      } catch (err) {
        return { error: String(err) }
      }
    })
  }, samples)
  results.forEach((r, i) => {
    const input = samples[i]!
    assert.ok(!('error' in r), `${JSON.stringify(input)}: ${'error' in r ? r.error : ''}`)
    if ('error' in r) return
    for (const tag of r.tags) assert.ok(ALLOWED.includes(tag), `${JSON.stringify(input)} made <${tag}>`)
    for (const attr of r.attrs)
      assert.ok(['A.href', 'A.target', 'A.rel', 'P.class'].includes(attr), `${JSON.stringify(input)}: ${attr}`)
    for (const l of r.links) {
      assert.match(l.href ?? '', /^https?:\/\//, JSON.stringify(input))
      assert.equal(l.rel, 'noopener noreferrer')
    }
    // Markup may go (list numbers, a code fence's language); letters and digits of the text stay.
    const words = (s: string) => s.replace(/[^\p{L}\p{N}]/gu, '')
    const content = input.replace(/^```.*$/gm, '').replace(/^\s*\d+[.)]\s+/gm, '')
    if (!/\]\(|<https?:|\|/.test(input)) assert.equal(words(r.text), words(content), JSON.stringify(input))
  })
  assert.deepEqual(problems, [])
})
