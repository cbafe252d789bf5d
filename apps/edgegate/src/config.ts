/**
 * edgegate configuration: flags > environment > JSON file (`--config`, `$EDGEGATE_CONFIG`, else
 * `/etc/gatehouse/edgegate.json` when it exists) > defaults, loaded by the kit's app shell.
 */
import { type ConfigOf, field, type Schema } from '@gatehouse/kit/config.ts'
import { parseDatabaseUrl } from '@gatehouse/kit/db/url.ts'
import { parseCidr } from '@gatehouse/kit/net.ts'

function databaseUrl(raw: unknown): string {
  if (typeof raw !== 'string') throw new Error('must be a string')
  parseDatabaseUrl(raw)
  return raw
}

const database = field.custom(databaseUrl, {
  env: 'EDGEGATE_DATABASE',
  flag: 'database',
  secret: true,
  default: 'sqlite:/var/lib/edgegate/edgegate.db',
  doc: 'sqlite:<file> (embedded default) or postgres://user@host/db (several edgegate processes share one)',
})

export const serveSchema = {
  listen: field.listen({
    env: 'EDGEGATE_LISTEN',
    flag: 'listen',
    default: '127.0.0.1:8443',
    doc: 'HTTPS listen address (host:port)',
  }),
  database,
  tls_cert: field.string({
    env: 'EDGEGATE_TLS_CERT',
    flag: 'tls-cert',
    required: true,
    doc: 'PEM server certificate chain',
  }),
  tls_key: field.string({ env: 'EDGEGATE_TLS_KEY', flag: 'tls-key', required: true, doc: 'PEM server private key' }),
  client_ca: field.string({
    env: 'EDGEGATE_CLIENT_CA',
    flag: 'client-ca',
    doc: 'PEM CA bundle; when set, nodes may authenticate with client certificates it issued (mTLS)',
  }),
  sighting_retention: field.duration({
    env: 'EDGEGATE_SIGHTING_RETENTION',
    flag: 'sighting-retention',
    default: '192h',
    min: '1m',
    doc: 'sightings older than this are removed (aggregates and decisions never are); 192h = 8 days',
  }),
  signal_retention: field.duration({
    env: 'EDGEGATE_SIGNAL_RETENTION',
    flag: 'signal-retention',
    default: '192h',
    min: '1h',
    doc: 'web signals observed longer ago than this are removed (8 days by default)',
  }),
  retention_interval: field.duration({
    env: 'EDGEGATE_RETENTION_INTERVAL',
    flag: 'retention-interval',
    default: '1h',
    min: '1s',
    doc: 'how often the sighting and signal cleanup runs',
  }),
  session_ttl: field.duration({
    env: 'EDGEGATE_SESSION_TTL',
    flag: 'session-ttl',
    default: '12h',
    min: '1m',
    doc: 'lifetime of a dashboard session',
  }),
  trusted_ranges_file: field.list({
    env: 'EDGEGATE_TRUSTED_RANGES_FILE',
    flag: 'trusted-ranges-file',
    doc: 'file of CIDR ranges (one per line, # comments); repeatable; enables trusted_ranges in policy responses',
  }),
  trusted_ranges_url: field.list({
    env: 'EDGEGATE_TRUSTED_RANGES_URL',
    flag: 'trusted-ranges-url',
    item: (s: string) => {
      const u = new URL(s)
      if (u.protocol !== 'https:') throw new Error('must be an https:// URL')
      return s
    },
    doc: 'HTTPS source of published ranges (text lines or a JSON array of CIDR strings); repeatable; redirects refused',
  }),
  trusted_ranges_ca: field.string({
    env: 'EDGEGATE_TRUSTED_RANGES_CA',
    flag: 'trusted-ranges-ca',
    doc: 'PEM CA bundle for the trusted-range URLs (default: the system roots)',
  }),
  trusted_ranges_refresh: field.duration({
    env: 'EDGEGATE_TRUSTED_RANGES_REFRESH',
    flag: 'trusted-ranges-refresh',
    default: '1h',
    min: '1s',
    doc: 'how often files are re-read and URLs re-fetched',
  }),
  policy_page_size: field.int({
    env: 'EDGEGATE_POLICY_PAGE_SIZE',
    flag: 'policy-page-size',
    default: 5000,
    min: 1,
    max: 50_000,
    doc: 'most decisions in one policy response (more: true tells the gate to pull again)',
  }),
  log_level: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, {
    env: 'EDGEGATE_LOG_LEVEL',
    flag: 'log-level',
    default: 'info',
  }),
} satisfies Schema

export type ServeConfig = ConfigOf<typeof serveSchema>

/** Flags of the admin CLIs (node, admin, decision, status, migrate): only the database. */
export const cliSchema = { database } satisfies Schema
export type CliConfig = ConfigOf<typeof cliSchema>

/** Parse a trusted-range file body into canonical CIDRs; throws naming the bad line. */
export function parseRangeLines(text: string, where: string): string[] {
  const out: string[] = []
  text.split(/\r?\n/).forEach((line, i) => {
    const s = line.replace(/#.*/, '').trim()
    if (s === '') return
    try {
      out.push(parseCidr(s).text)
    } catch (err) {
      throw new Error(`${where} line ${i + 1}: ${(err as Error).message}`)
    }
  })
  return out
}
