/**
 * Per-type RDATA: presentation tokens -> canonical presentation text, validating as it goes.
 * Canonical form: names absolute and lower-case, numbers in decimal, IPv6 compressed,
 * strings quoted with escapes normalised. Equal records have equal canonical text.
 */
import { CharStringError, decodeCharString, encodeCharString } from './charstring.ts'
import { ZoneError } from './errors.ts'
import type { Token } from './lexer.ts'
import { NameError, resolveName } from './names.ts'
import { MAX_TTL, parseTtlText } from './ttl.ts'

export const RECORD_TYPES = ['SOA', 'NS', 'A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'CAA'] as const
export type RecordType = (typeof RECORD_TYPES)[number]

export function isRecordType(type: string): type is RecordType {
  return (RECORD_TYPES as readonly string[]).includes(type)
}

/** Type order inside one owner name in canonical output (SOA and NS first, like most zone files). */
export const TYPE_ORDER: Record<RecordType, number> = {
  SOA: 0,
  NS: 1,
  A: 2,
  AAAA: 3,
  CNAME: 4,
  MX: 5,
  TXT: 6,
  SRV: 7,
  CAA: 8,
}

/** The most octets of RDATA a record can carry (RFC 1035 §3.2.1: RDLENGTH is 16 bits). */
const MAX_RDATA = 65535

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

class RdataError extends Error {}

function fail(message: string): never {
  throw new RdataError(message)
}

function count(tokens: Token[], n: number, what: string) {
  if (tokens.length !== n) fail(`expected ${what} (${n} field${n === 1 ? '' : 's'}), got ${tokens.length}`)
}

function unquoted(token: Token, what: string): string {
  if (token.quoted) fail(`${what} must not be quoted`)
  return token.text
}

function uint(token: Token, max: number, what: string): number {
  const text = unquoted(token, what)
  if (!/^\d+$/.test(text)) fail(`${what} must be a decimal number, got ${JSON.stringify(text)}`)
  const n = Number(text)
  if (n > max) fail(`${what} must be at most ${max}, got ${text}`)
  return n
}

function name(token: Token, origin: string, what: string): string {
  try {
    return resolveName(unquoted(token, what), origin)
  } catch (err) {
    if (err instanceof NameError) fail(`${what}: ${err.message}`)
    throw err
  }
}

function charString(token: Token, max: number, what: string): Uint8Array {
  let bytes: Uint8Array
  try {
    bytes = decodeCharString(token.text)
  } catch (err) {
    if (err instanceof CharStringError) fail(`${what}: ${err.message}`)
    throw err
  }
  if (bytes.length > max) fail(`${what} is ${bytes.length} octets; the limit is ${max}`)
  return bytes
}

function timer(token: Token, what: string): number {
  const text = unquoted(token, what)
  const n = parseTtlText(text)
  if (n === undefined) fail(`${what} must be a number of seconds or a duration like 1h, got ${JSON.stringify(text)}`)
  if (n > MAX_TTL) fail(`${what} must be at most ${MAX_TTL}, got ${text}`)
  return n
}

function ipv6(text: string): string {
  // node's URL parser validates and prints the WHATWG canonical form (compressed, lower case).
  if (!text.includes(':') || text.includes('%') || text.includes('[') || text.includes(']')) {
    fail(`invalid IPv6 address ${JSON.stringify(text)}`)
  }
  try {
    return new URL(`http://[${text}]/`).hostname.slice(1, -1)
  } catch {
    fail(`invalid IPv6 address ${JSON.stringify(text)}`)
  }
}

const PARSERS: Record<RecordType, (t: Token[], origin: string) => string> = {
  A(t) {
    count(t, 1, 'an IPv4 address')
    const text = unquoted(t[0]!, 'IPv4 address')
    if (!IPV4.test(text)) fail(`invalid IPv4 address ${JSON.stringify(text)}`)
    return text
  },
  AAAA(t) {
    count(t, 1, 'an IPv6 address')
    return ipv6(unquoted(t[0]!, 'IPv6 address'))
  },
  NS(t, origin) {
    count(t, 1, 'a name server name')
    return name(t[0]!, origin, 'name server')
  },
  CNAME(t, origin) {
    count(t, 1, 'a target name')
    return name(t[0]!, origin, 'target')
  },
  MX(t, origin) {
    count(t, 2, 'preference and exchange')
    return `${uint(t[0]!, 65535, 'preference')} ${name(t[1]!, origin, 'exchange')}`
  },
  SRV(t, origin) {
    count(t, 4, 'priority, weight, port and target')
    const [p, w, port, target] = t as [Token, Token, Token, Token]
    return `${uint(p, 65535, 'priority')} ${uint(w, 65535, 'weight')} ${uint(port, 65535, 'port')} ${name(target, origin, 'target')}`
  },
  TXT(t) {
    if (t.length === 0) fail('expected at least one character-string')
    const strings = t.map((tok, i) => charString(tok, 255, `string ${i + 1}`))
    // RFC 1035 §3.2.1: RDLENGTH is 16 bits; each string costs its length octet too. Knot
    // refuses a longer record when it loads the file, after the publication has begun.
    const octets = strings.reduce((n, s) => n + 1 + s.length, 0)
    if (octets > MAX_RDATA) fail(`${t.length} strings make ${octets} octets of RDATA; the limit is ${MAX_RDATA}`)
    return strings.map(encodeCharString).join(' ')
  },
  CAA(t) {
    count(t, 3, 'flags, tag and value')
    const flags = uint(t[0]!, 255, 'flags')
    const tag = unquoted(t[1]!, 'tag')
    // RFC 8659 §4.1: the tag is 1-15 letters and digits; matching is case-insensitive.
    if (!/^[A-Za-z0-9]{1,15}$/.test(tag)) fail(`tag must be 1 to 15 letters or digits, got ${JSON.stringify(tag)}`)
    const value = charString(t[2]!, MAX_RDATA - 2 - tag.length, 'value')
    return `${flags} ${tag.toLowerCase()} ${encodeCharString(value)}`
  },
  SOA(t, origin) {
    count(t, 7, 'mname, rname, serial, refresh, retry, expire and minimum')
    const mname = name(t[0]!, origin, 'primary name server (mname)')
    const rname = name(t[1]!, origin, 'responsible mailbox (rname)')
    const serial = uint(t[2]!, 4294967295, 'serial')
    const timers = ['refresh', 'retry', 'expire', 'minimum'].map((w, i) => timer(t[3 + i]!, w))
    return `${mname} ${rname} ${serial} ${timers.join(' ')}`
  },
}

/** Canonical RDATA text of `type` from its tokens; `line` is only for the error message. */
export function parseRdata(type: RecordType, tokens: Token[], origin: string, line?: number): string {
  try {
    return PARSERS[type](tokens, origin)
  } catch (err) {
    if (err instanceof RdataError) throw new ZoneError('invalid_record', `${type} record: ${err.message}`, line)
    throw err
  }
}

/** The fields of a canonical SOA RDATA. */
export interface Soa {
  mname: string
  rname: string
  serial: number
  refresh: number
  retry: number
  expire: number
  minimum: number
}

export function soaFields(rdata: string): Soa {
  const [mname, rname, serial, refresh, retry, expire, minimum] = rdata.split(' ')
  return {
    mname: mname!,
    rname: rname!,
    serial: Number(serial),
    refresh: Number(refresh),
    retry: Number(retry),
    expire: Number(expire),
    minimum: Number(minimum),
  }
}

export function soaText(soa: Soa): string {
  return `${soa.mname} ${soa.rname} ${soa.serial} ${soa.refresh} ${soa.retry} ${soa.expire} ${soa.minimum}`
}
