/**
 * Parsers for blocklist source text, one line at a time, all three formats in one pass (real
 * lists mix them):
 *   hosts files      `0.0.0.0 ads.example tracker.example  # comment`
 *   plain domains    `ads.example` (a leading `*.` is dropped: a name covers its subdomains)
 *   adblock subset   `||ads.example^` blocks, `@@||ads.example^` allows; other adblock rules
 *                    (paths, cosmetic `##`, `$` options) are counted as unsupported, not invalid
 * Comments: `#`, `!` and `[Adblock Plus 2.0]`-style headers. Never throws.
 *
 * The downloaded body is read as bytes: an ASCII line (nearly all of them) is taken apart in
 * place and its names go into a NameSet without becoming strings. A line with other characters
 * (IDNA names, odd whitespace) takes the string path below, with the same rules.
 */
import { isIP } from 'node:net'
import { FNV_OFFSET, hashStep, NameSet } from './name-set.ts'
import { LOCAL_NAMES, normaliseName } from './names.ts'

export interface ParsedList {
  /** Normalised names to block, in source order, duplicates removed. */
  block: NameSet
  /** Normalised names the source itself exempts (`@@||name^`). */
  allow: NameSet
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

class Parser {
  readonly out: ParsedList = {
    block: new NameSet(),
    allow: new NameSet(),
    entries: 0,
    invalid: 0,
    invalidSamples: [],
    unsupported: 0,
  }

  bad(raw: string): void {
    this.out.invalid++
    if (this.out.invalidSamples.length < 5) this.out.invalidSamples.push(raw.slice(0, 80))
  }

  /**
   * Normalise the ASCII name `b[s..e)` and add it to `set`; false when it is not a usable name.
   * The one-pass check of names.ts, on octets; other characters go to normaliseName itself.
   */
  addName(set: NameSet, b: Uint8Array, s: number, e: number, hostsOrPlain: boolean): boolean {
    const end = e > s && b[e - 1] === 46 ? e - 1 : e
    if (end === s || end - s > 253) return false
    let labelStart = s
    let labels = 1
    let digitsOnly = true
    let upper = false
    for (let i = s; i < end; i++) {
      const c = b[i]!
      if (c === 46) {
        if (!labelOk(b, labelStart, i)) return false
        labels++
        labelStart = i + 1
        digitsOnly = true
      } else if (c >= 48 && c <= 57) {
        // digit
      } else if ((c >= 97 && c <= 122) || c === 45 || c === 95) digitsOnly = false
      else if (c >= 65 && c <= 90) {
        upper = true
        digitsOnly = false
      } else {
        const name = normaliseName(Buffer.from(b.buffer, b.byteOffset + s, e - s).toString('latin1'))
        if (name === undefined) return false
        if (!(hostsOrPlain && LOCAL_NAMES.has(name))) set.addString(name)
        return true
      }
    }
    if (labels < 2 || digitsOnly || !labelOk(b, labelStart, end)) return false
    let h = FNV_OFFSET
    for (let i = end - 1; i >= s; i--) {
      const c = b[i]!
      h = hashStep(h, c >= 65 && c <= 90 ? c + 32 : c)
    }
    // Hosts files name the machine itself (localhost.localdomain and kin): never blocked.
    if (hostsOrPlain && end - s <= 25 && isLocal(b, s, end)) return true
    set.add(b, s, end, h, upper)
    return true
  }

  /** A line with characters beyond ASCII: the same rules on a string. */
  textLine(line: string): void {
    const out = this.out
    line = line.trim()
    const first = line.charCodeAt(0)
    // blank, '#', '!', '['
    if (line === '' || first === 35 || first === 33 || first === 91) return
    out.entries++
    if (first === 124 || first === 64) {
      const isAllow = line.startsWith('@@||')
      if (!isAllow && !line.startsWith('||')) {
        out.unsupported++
        return
      }
      const raw = adblockName(isAllow ? line.slice(2) : line)
      // A valid name never holds URL-rule characters, so they are looked for only on failure.
      const name = raw === undefined ? undefined : normaliseName(raw)
      if (name !== undefined) (isAllow ? out.allow : out.block).addString(name)
      else if (raw === undefined || URL_RULE.test(raw)) out.unsupported++
      else this.bad(line)
      return
    }
    const hash = line.indexOf('#')
    if (hash !== -1) {
      // A '#' inside a token is an adblock cosmetic rule (`example.com##.ad`).
      if (hash > 0 && line.charCodeAt(hash - 1) !== 32 && line.charCodeAt(hash - 1) !== 9) {
        out.unsupported++
        return
      }
      line = line.slice(0, hash).trimEnd()
    }
    const tokens = line.includes(' ') || line.includes('\t') ? tokensOf(line) : [line]
    if (tokens.length > 1 && !isHostsAddress(tokens[0]!)) {
      this.bad(line)
      return
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
        else this.bad(raw)
      } else if (!LOCAL_NAMES.has(name)) out.block.addString(name)
    }
  }

  /** An ASCII line `b[s..e)`, already trimmed and not blank. */
  asciiLine(b: Uint8Array, s: number, e: number): void {
    const out = this.out
    const first = b[s]!
    if (first === 35 || first === 33 || first === 91) return
    out.entries++
    if (first === 124 || first === 64) {
      const isAllow = e - s >= 4 && first === 64 && b[s + 1] === 64 && b[s + 2] === 124 && b[s + 3] === 124
      if (!isAllow && !(e - s >= 2 && first === 124 && b[s + 1] === 124)) {
        out.unsupported++
        return
      }
      // The rule without `@@`, then its name between `||` and `^` (or `^|`).
      const rs = isAllow ? s + 2 : s
      let re = e
      if (re - rs >= 2 && b[re - 2] === 94 && b[re - 1] === 124) re -= 2
      else if (b[re - 1] === 94) re -= 1
      else {
        out.unsupported++
        return
      }
      const ns = rs + 2
      if (re > ns && this.addName(isAllow ? out.allow : out.block, b, ns, re, false)) return
      if (hasUrlRuleChar(b, ns, re)) out.unsupported++
      else this.bad(latin1(b, s, e))
      return
    }
    let end = e
    for (let i = s + 1; i < e; i++) {
      if (b[i] !== 35) continue
      const before = b[i - 1]
      // A '#' inside a token is an adblock cosmetic rule (`example.com##.ad`).
      if (before !== 32 && before !== 9) {
        out.unsupported++
        return
      }
      end = i
      while (isSpace(b[end - 1]!)) end--
      break
    }
    // Tokens: runs of characters other than space and tab.
    let t0 = s
    while (t0 < end && b[t0] !== 32 && b[t0] !== 9) t0++
    if (t0 === end) {
      this.token(b, s, end, true)
      return
    }
    if (!isHostsAddress(latin1(b, s, t0))) {
      this.bad(latin1(b, s, end))
      return
    }
    for (let i = t0; i < end; ) {
      while (i < end && (b[i] === 32 || b[i] === 9)) i++
      const ts = i
      while (i < end && b[i] !== 32 && b[i] !== 9) i++
      if (i > ts) this.token(b, ts, i, false)
    }
  }

  /** One name of a plain line (`alone`) or of a hosts line. */
  token(b: Uint8Array, s: number, e: number, alone: boolean): void {
    const rs = e - s >= 2 && b[s] === 42 && b[s + 1] === 46 ? s + 2 : s
    if (this.addName(this.out.block, b, rs, e, true)) return
    // Adblock URL rules (`/ads/*`, `ads.js$script`): outside the supported subset.
    if (alone && hasUrlRuleChar(b, rs, e)) this.out.unsupported++
    // Single-label hosts entries (localhost, broadcasthost) are the file's own boilerplate.
    else if (!alone && b.subarray(rs, e).indexOf(46) === -1) return
    else this.bad(latin1(b, rs, e))
  }
}

function labelOk(b: Uint8Array, from: number, to: number): boolean {
  const len = to - from
  return len >= 1 && len <= 63 && b[from] !== 45 && b[to - 1] !== 45
}

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13)
}

function hasUrlRuleChar(b: Uint8Array, s: number, e: number): boolean {
  for (let i = s; i < e; i++) {
    const c = b[i]!
    if (c === 47 || c === 36 || c === 42 || c === 94 || c === 124) return true
  }
  return false
}

function latin1(b: Uint8Array, s: number, e: number): string {
  return Buffer.from(b.buffer, b.byteOffset + s, e - s).toString('latin1')
}

/** Is the name `b[s..e)` one of LOCAL_NAMES (any case)? Only short names ending in n or t can be. */
function isLocal(b: Uint8Array, s: number, e: number): boolean {
  const last = b[e - 1]! | 0x20
  return (last === 110 || last === 116) && LOCAL_NAMES.has(latin1(b, s, e).toLowerCase())
}

/** Parse a source body (bytes as downloaded, or text). */
export function parseList(input: Uint8Array | string): ParsedList {
  const b = typeof input === 'string' ? Buffer.from(input, 'utf8') : input
  const buf = Buffer.from(b.buffer, b.byteOffset, b.length)
  const p = new Parser()
  let start = 0
  while (start < b.length) {
    let nl = buf.indexOf(10, start)
    if (nl === -1) nl = b.length
    let s = start
    let e = nl
    start = nl + 1
    while (s < e && isSpace(b[s]!)) s++
    while (e > s && isSpace(b[e - 1]!)) e--
    if (s === e) continue
    let ascii = true
    for (let i = s; i < e; i++) {
      if (b[i]! >= 0x80) {
        ascii = false
        break
      }
    }
    if (ascii) p.asciiLine(b, s, e)
    else p.textLine(buf.toString('utf8', s, e))
  }
  return p.out
}

/**
 * Every line through the string path (the rules as first written, before the byte path): the
 * reference the byte path is tested against.
 */
export function parseListAsText(text: string): ParsedList {
  const p = new Parser()
  for (const line of text.split('\n')) p.textLine(line)
  return p.out
}
