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
  return rule.slice(2, end)
}

/** Characters of adblock URL rules (paths, options, wildcards): outside the supported subset. */
const URL_RULE = /[/$*^|]/

/** The address of a hosts-file line; the two every list uses are recognised without parsing. */
function isHostsAddress(token: string): boolean {
  return token === '0.0.0.0' || token === '127.0.0.1' || isIP(token) !== 0
}

/** Split on runs of spaces and tabs (the line is already trimmed). */
function tokensOf(line: string): string[] {
  const out: string[] = []
  let start = -1
  for (let i = 0; i <= line.length; i++) {
    const c = i < line.length ? line.charCodeAt(i) : 32
    if (c === 32 || c === 9) {
      if (start !== -1) out.push(line.slice(start, i))
      start = -1
    } else if (start === -1) start = i
  }
  return out
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
      // A valid name never holds URL-rule characters, so they are looked for only on failure.
      const name = raw === undefined ? undefined : normaliseName(raw)
      if (name !== undefined) (isAllow ? allow : block).add(name)
      else if (raw === undefined || URL_RULE.test(raw)) out.unsupported++
      else bad(line)
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
    const tokens = line.includes(' ') || line.includes('\t') ? tokensOf(line) : [line]
    if (tokens.length > 1 && !isHostsAddress(tokens[0]!)) {
      bad(line)
      continue
    }
    for (let t = tokens.length > 1 ? 1 : 0; t < tokens.length; t++) {
      let raw = tokens[t]!
      if (raw.startsWith('*.')) raw = raw.slice(2)
      const name = normaliseName(raw)
      if (name === undefined) {
        // Adblock URL rules (`/ads/*`, `ads.js$script`): outside the supported subset.
        if (tokens.length === 1 && URL_RULE.test(raw)) out.unsupported++
        // Single-label hosts entries (localhost, broadcasthost) are the file's own boilerplate.
        else if (tokens.length > 1 && !raw.includes('.')) continue
        else bad(raw)
      } else if (!LOCAL_NAMES.has(name)) block.add(name)
    }
  }
  out.block = [...block]
  out.allow = [...allow]
  return out
}
