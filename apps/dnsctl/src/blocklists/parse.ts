/**
 * Parsers for blocklist source text, one line at a time, all three formats in one pass (real
 * lists mix them):
 *   hosts files      `0.0.0.0 ads.example tracker.example  # comment`
 *   plain domains    `ads.example` (a leading `*.` is dropped: a name covers its subdomains)
 *   adblock subset   `||ads.example^` blocks, `@@||ads.example^` allows; other adblock rules
 *                    (paths, cosmetic `##`, `$` options) are counted as unsupported, not invalid
 * Comments: `#`, `!` and `[Adblock Plus 2.0]`-style headers. Never throws.
 */
import { isIP } from 'node:net'
import { LOCAL_NAMES, normaliseName } from './names.ts'

export interface ParsedList {
  /** Normalised names to block, in source order, duplicates removed. */
  block: string[]
  /** Normalised names the source itself exempts (`@@||name^`). */
  allow: string[]
  /** Lines that hold an entry (not blank, not a comment). */
  entries: number
  /** Entries whose name is not a valid domain (with up to five examples). */
  invalid: number
  invalidSamples: string[]
  /** Adblock rules outside the supported subset. */
  unsupported: number
}

/** `||name^` with nothing after the separator (`|` end anchor tolerated); undefined otherwise. */
function adblockName(rule: string): string | undefined {
  let end = rule.length
  if (rule.endsWith('^|')) end -= 2
  else if (rule.endsWith('^')) end -= 1
  else return undefined
  const name = rule.slice(2, end)
  return /[/$*^|]/.test(name) ? undefined : name
}

export function parseList(text: string): ParsedList {
  const block = new Set<string>()
  const allow = new Set<string>()
  const out: ParsedList = { block: [], allow: [], entries: 0, invalid: 0, invalidSamples: [], unsupported: 0 }
  const bad = (raw: string) => {
    out.invalid++
    if (out.invalidSamples.length < 5) out.invalidSamples.push(raw.slice(0, 80))
  }
  let start = 0
  while (start < text.length) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    let line = text.slice(start, end)
    start = end + 1
    if (line.endsWith('\r')) line = line.slice(0, -1)
    line = line.trim()
    const first = line.charCodeAt(0)
    // blank, '#', '!', '['
    if (line === '' || first === 35 || first === 33 || first === 91) continue
    out.entries++
    if (first === 124 || first === 64) {
      // '|' or '@': adblock syntax
      const isAllow = line.startsWith('@@||')
      if (!isAllow && !line.startsWith('||')) {
        out.unsupported++
        continue
      }
      const raw = adblockName(isAllow ? line.slice(2) : line)
      if (raw === undefined) {
        out.unsupported++
        continue
      }
      const name = normaliseName(raw)
      if (name === undefined) bad(line)
      else (isAllow ? allow : block).add(name)
      continue
    }
    const hash = line.indexOf('#')
    if (hash !== -1) {
      // A '#' inside a token is an adblock cosmetic rule (`example.com##.ad`).
      if (hash > 0 && line.charCodeAt(hash - 1) !== 32 && line.charCodeAt(hash - 1) !== 9) {
        out.unsupported++
        continue
      }
      line = line.slice(0, hash).trimEnd()
    }
    const tokens = line.includes(' ') || line.includes('\t') ? line.split(/[ \t]+/) : [line]
    let names = tokens
    if (tokens.length > 1) {
      if (isIP(tokens[0]!) === 0) {
        bad(line)
        continue
      }
      names = tokens.slice(1)
    }
    for (let raw of names) {
      if (raw.startsWith('*.')) raw = raw.slice(2)
      if (tokens.length === 1 && /[/$^|*]/.test(raw)) {
        // Adblock URL rules (`/ads/*`, `ads.js$script`): outside the supported subset.
        out.unsupported++
        continue
      }
      const name = normaliseName(raw)
      if (name === undefined) {
        // Single-label hosts entries (localhost, broadcasthost) are the file's own boilerplate.
        if (tokens.length > 1 && !raw.includes('.')) continue
        bad(raw)
      } else if (!LOCAL_NAMES.has(name)) block.add(name)
    }
  }
  out.block = [...block]
  out.allow = [...allow]
  return out
}
