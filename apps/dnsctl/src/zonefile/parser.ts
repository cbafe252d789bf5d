/**
 * RFC 1035 §5 master file parser for the record types we manage. Supports `$ORIGIN`,
 * `$TTL` (RFC 2308), parentheses, comments, blank owners, relative names and `@` (also in
 * RDATA), TTL units, class IN. Refuses `$INCLUDE` and every other directive: zone text comes
 * from API callers and must never make anything read a file.
 */
import { ZoneError } from './errors.ts'
import { type Entry, lex, type Token } from './lexer.ts'
import { NameError, resolveName } from './names.ts'
import { isRecordType, parseRdata, RECORD_TYPES, type RecordType } from './rdata.ts'
import { isValidTtl, MAX_TTL, parseTtlText } from './ttl.ts'
import { setSourceLines, sortRecords, type Zone, type ZoneRecord } from './zone.ts'

/** Classes other than IN, refused by name (RFC 1035 §3.2.4, RFC 3597 CLASSnn). */
const OTHER_CLASSES = /^(CH|CS|HS|NONE|ANY|CLASS\d+)$/

/** Well-known types we do not manage: named in the error rather than called a syntax error. */
const KNOWN_TYPES = new Set(
  'PTR HINFO MINFO RP AFSDB NAPTR KX CERT DNAME SSHFP TLSA SMIMEA OPENPGPKEY SVCB HTTPS DS DNSKEY RRSIG NSEC NSEC3 NSEC3PARAM CDS CDNSKEY CSYNC ZONEMD LOC SPF URI NULL WKS MB MG MR MD MF X25 ISDN RT NSAP SIG KEY PX GPOS APL IPSECKEY DHCID HIP EUI48 EUI64 L32 L64 LP NID ANAME ALIAS'.split(
    ' ',
  ),
)

export interface ParseOptions {
  /** The zone name (absolute, lower-case, trailing dot): the initial `$ORIGIN`. */
  origin: string
}

function resolve(token: Token, origin: string, what: string, line: number): string {
  if (token.quoted) throw new ZoneError('invalid_zone_text', `${what} must not be quoted`, line)
  try {
    return resolveName(token.text, origin)
  } catch (err) {
    if (err instanceof NameError) throw new ZoneError('invalid_record', `${what}: ${err.message}`, line)
    throw err
  }
}

function ttlValue(text: string, line: number): number {
  const n = parseTtlText(text)
  if (n === undefined) throw new ZoneError('invalid_ttl', `invalid TTL ${JSON.stringify(text)}`, line)
  if (!isValidTtl(n)) throw new ZoneError('invalid_ttl', `TTL ${text} is above the maximum ${MAX_TTL} (RFC 2181)`, line)
  return n
}

/** Classify a type token: a managed type, or an error naming why not. */
export function recordType(text: string, line?: number): RecordType {
  const upper = text.toUpperCase()
  if (isRecordType(upper)) return upper
  if (KNOWN_TYPES.has(upper) || /^TYPE\d+$/.test(upper)) {
    throw new ZoneError(
      'unsupported_type',
      `record type ${upper} is not supported (supported: ${RECORD_TYPES.join(', ')})`,
      line,
    )
  }
  throw new ZoneError('invalid_record', `unknown record type ${JSON.stringify(text)}`, line)
}

/** Parse zone text into a zone in canonical order. Zone-level rules are in validate.ts. */
export function parseZone(text: string, options: ParseOptions): Zone {
  const entries = lex(text)
  let origin = options.origin
  let defaultTtl: number | undefined
  let lastTtl: number | undefined
  let lastOwner: string | undefined
  const records: ZoneRecord[] = []
  const lines: number[] = []

  for (const entry of entries) {
    const first = entry.tokens[0]!
    if (!entry.blankOwner && !first.quoted && first.text.startsWith('$')) {
      const directive = first.text.toUpperCase()
      const args = entry.tokens.slice(1)
      if (directive === '$INCLUDE') {
        throw new ZoneError('include_refused', '$INCLUDE is refused: zone text may not refer to files', entry.line)
      }
      if (directive === '$ORIGIN') {
        if (args.length !== 1) throw new ZoneError('invalid_zone_text', '$ORIGIN takes exactly one name', entry.line)
        origin = resolve(args[0]!, origin, '$ORIGIN', entry.line)
      } else if (directive === '$TTL') {
        if (args.length !== 1 || args[0]!.quoted) {
          throw new ZoneError('invalid_zone_text', '$TTL takes exactly one TTL value', entry.line)
        }
        defaultTtl = ttlValue(args[0]!.text, entry.line)
      } else {
        throw new ZoneError('invalid_zone_text', `unsupported directive ${first.text}`, entry.line)
      }
      continue
    }
    const { record, explicitTtl } = parseRecord(entry, origin, lastOwner, defaultTtl ?? lastTtl)
    records.push(record)
    lines.push(entry.line)
    lastOwner = record.name
    // RFC 1035 §5.1: without $TTL, an omitted TTL is the last explicitly stated one.
    if (explicitTtl !== undefined) lastTtl = explicitTtl
  }
  const zone = { origin: options.origin, records: sortRecords(records, options.origin) }
  setSourceLines(zone, records, lines)
  return zone
}

function parseRecord(
  entry: Entry,
  origin: string,
  lastOwner: string | undefined,
  fallbackTtl: number | undefined,
): { record: ZoneRecord; explicitTtl: number | undefined } {
  const tokens = entry.tokens
  let i = 0
  let owner: string
  if (entry.blankOwner) {
    if (lastOwner === undefined) {
      throw new ZoneError(
        'invalid_zone_text',
        'the first record has no owner name (the line starts with a blank)',
        entry.line,
      )
    }
    owner = lastOwner
  } else {
    owner = resolve(tokens[0]!, origin, 'owner name', entry.line)
    i = 1
  }
  let ttl: number | undefined
  let sawClass = false
  for (; i < tokens.length; i++) {
    const tok = tokens[i]!
    if (tok.quoted) throw new ZoneError('invalid_record', `unexpected quoted text before the record type`, entry.line)
    const upper = tok.text.toUpperCase()
    if (/^\d/.test(tok.text) && ttl === undefined) {
      ttl = ttlValue(tok.text, entry.line)
      continue
    }
    if (upper === 'IN' && !sawClass) {
      sawClass = true
      continue
    }
    if (OTHER_CLASSES.test(upper) && !sawClass) {
      throw new ZoneError(
        'non_internet_class',
        `class ${upper} is not supported: only IN (Internet) records`,
        entry.line,
      )
    }
    break
  }
  const typeToken = tokens[i]
  if (!typeToken) throw new ZoneError('invalid_record', 'record has no type', entry.line)
  const type = recordType(typeToken.text, entry.line)
  const rdata = parseRdata(type, tokens.slice(i + 1), origin, entry.line)
  const effective = ttl ?? fallbackTtl
  if (effective === undefined) {
    throw new ZoneError('invalid_ttl', 'record has no TTL and no $TTL is set before it', entry.line)
  }
  return { record: { name: owner, ttl: effective, type, rdata }, explicitTtl: ttl }
}
