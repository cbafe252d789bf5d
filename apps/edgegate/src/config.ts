/**
 * edgegate configuration: flags > environment > JSON file (`--config`, `$EDGEGATE_CONFIG`, else
 * `/etc/gatehouse/edgegate.json` when it exists) > defaults, loaded by the kit's app shell.
 */
import { dirname, isAbsolute } from 'node:path'
import { type AppConfigOptions, loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { ConfigError, type ConfigOf, field, type Loaded, loadWithChecks, type Schema } from '@gatehouse/kit/config.ts'
import { databaseUrlMayHoldSecret, parseDatabaseUrl } from '@gatehouse/kit/db/url.ts'
import { INSTANCE_ID_PATTERN } from '@gatehouse/kit/edge-limits.ts'
import { isLoopback, parseCidr } from '@gatehouse/kit/net.ts'

function databaseUrl(raw: unknown): string {
  if (typeof raw !== 'string') throw new Error('must be a string')
  parseDatabaseUrl(raw)
  return raw
}

const database = field.custom(databaseUrl, {
  env: 'EDGEGATE_DATABASE',
  flag: 'database',
  // A PostgreSQL URL may carry a password; a sqlite: path in a readable config file is no secret.
  secret: databaseUrlMayHoldSecret,
  default: 'sqlite:/var/lib/edgegate/edgegate.db',
  doc: 'sqlite:<file> (embedded default) or postgres://user@host/db (several edgegate processes share one)',
})

/** Where a packaged edgegate's runtime folder puts the control socket (see `control_socket`). */
export const DEFAULT_CONTROL_SOCKET = '/run/edgegate/control.sock'

// A Unix socket's path is limited to 107 bytes (sun_path): refused here, not at listen time.
function controlSocketPath(raw: unknown): string {
  if (typeof raw !== 'string') throw new Error('must be a string')
  if (raw === '') return raw
  if (!isAbsolute(raw)) throw new Error(`must be an absolute path, got "${raw}"`)
  if (Buffer.byteLength(raw) > 100) throw new Error('must be at most 100 bytes long (a Unix socket path)')
  return raw
}

export const serveSchema = {
  listen: field.listen({
    env: 'EDGEGATE_LISTEN',
    flag: 'listen',
    default: '127.0.0.1:8443',
    doc: 'HTTPS listen address (host:port)',
  }),
  database,
  control_socket: field.custom(controlSocketPath, {
    env: 'EDGEGATE_CONTROL_SOCKET',
    flag: 'control-socket',
    default: DEFAULT_CONTROL_SOCKET,
    doc: `Unix socket where serve answers /readyz and /healthz in plain HTTP for commands on this host (\`edgegate status\` asks it first: no TLS to start); the default is used only when ${dirname(DEFAULT_CONTROL_SOCKET)} exists (systemd's RuntimeDirectory=edgegate); an empty value turns it off`,
  }),
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
  audit_retention: field.duration({
    env: 'EDGEGATE_AUDIT_RETENTION',
    flag: 'audit-retention',
    default: '8760h',
    doc: 'audit log entries older than this are removed (8760h = a year); 0 keeps every entry',
  }),
  deleted_decision_retention: field.duration({
    env: 'EDGEGATE_DELETED_DECISION_RETENTION',
    flag: 'deleted-decision-retention',
    default: '720h',
    doc: 'deleted decisions (the tombstones that tell gates to drop a verdict) older than this are removed, 30 days by default; a gate that has not pulled since then pulls its whole policy again; 0 keeps them; otherwise at least 24h',
  }),
  max_fingerprints: field.int({
    env: 'EDGEGATE_MAX_FINGERPRINTS',
    flag: 'max-fingerprints',
    default: 0,
    min: -1,
    doc: "fingerprint aggregates kept per node; past it the least recently seen undecided ones are removed; 0 = 100000 (a gate's own default), -1 = unlimited",
  }),
  fingerprint_retention: field.duration({
    env: 'EDGEGATE_FINGERPRINT_RETENTION',
    flag: 'fingerprint-retention',
    default: '0',
    doc: 'undecided fingerprint aggregates not seen for this long are removed; 0 (the default) keeps them; otherwise at least 24h',
  }),
  retention_interval: field.duration({
    env: 'EDGEGATE_RETENTION_INTERVAL',
    flag: 'retention-interval',
    default: '1h',
    min: '1s',
    doc: 'how often the sighting, signal, fingerprint aggregate, deleted decision and audit log cleanup runs',
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
  web_candidate_window: field.duration({
    env: 'EDGEGATE_WEB_CANDIDATE_WINDOW',
    flag: 'web-candidate-window',
    default: '15m',
    min: '1m',
    max: '30m',
    doc: 'evidence interval of the candidate report when ?window= is not given, and of each controller pass',
  }),
  web_shadow_enabled: field.boolean({
    env: 'EDGEGATE_WEB_SHADOW_ENABLED',
    flag: 'web-shadow-enabled',
    default: false,
    doc: 'score web candidates (shadow_status, shadow_reasons, proposed expiry); simulation only',
  }),
  web_shadow_min_networks: field.int({
    env: 'EDGEGATE_WEB_SHADOW_MIN_NETWORKS',
    flag: 'web-shadow-min-networks',
    default: 2,
    min: 1,
    max: 1_000_000,
    doc: 'distinct client networks (/24 IPv4, /64 IPv6) a candidate needs for would_block',
  }),
  web_shadow_min_signals: field.int({
    env: 'EDGEGATE_WEB_SHADOW_MIN_SIGNALS',
    flag: 'web-shadow-min-signals',
    default: 5,
    min: 1,
    max: 1_000_000_000,
    doc: 'matching web signals a candidate needs for would_block',
  }),
  web_shadow_min_error_ratio: field.number({
    env: 'EDGEGATE_WEB_SHADOW_MIN_ERROR_RATIO',
    flag: 'web-shadow-min-error-ratio',
    default: 0.5,
    min: 0,
    max: 1,
    doc: 'errors / (errors + successes) over the matching signals a candidate needs for would_block (0..1)',
  }),
  web_shadow_require_multi_scope: field.boolean({
    env: 'EDGEGATE_WEB_SHADOW_REQUIRE_MULTI_SCOPE',
    flag: 'web-shadow-require-multi-scope',
    default: true,
    doc: 'would_block also needs evidence from two or more sites or two or more web signal nodes',
  }),
  web_shadow_proposed_ttl: field.duration({
    env: 'EDGEGATE_WEB_SHADOW_PROPOSED_TTL',
    flag: 'web-shadow-proposed-ttl',
    default: '1h',
    min: '1m',
    max: '168h',
    doc: 'lifetime of a would-be block (proposed expiry); also the lifetime of automated blocks',
  }),
  web_enforcement_mode: field.enum(['disabled', 'canary', 'enforce'] as const, {
    env: 'EDGEGATE_WEB_ENFORCEMENT_MODE',
    flag: 'web-enforcement-mode',
    default: 'disabled',
    doc: 'disabled: no automated blocks (existing ones are revoked); canary: only the canary TLS gates; enforce: every active TLS gate',
  }),
  web_enforcement_canary_nodes: field.list({
    env: 'EDGEGATE_WEB_ENFORCEMENT_CANARY_NODES',
    flag: 'web-enforcement-canary-nodes',
    item: (s: string) => {
      if (!new RegExp(INSTANCE_ID_PATTERN).test(s)) throw new Error('must be an instance id')
      return s
    },
    doc: 'TLS gate instance ids covered in canary mode; repeatable or comma-separated',
  }),
  web_enforcement_interval: field.duration({
    env: 'EDGEGATE_WEB_ENFORCEMENT_INTERVAL',
    flag: 'web-enforcement-interval',
    default: '1m',
    min: '1s',
    max: '1h',
    doc: 'how often the enforcement controller runs a pass',
  }),
  alert_url: field.url({
    env: 'EDGEGATE_ALERT_URL',
    flag: 'alert-url',
    secret: true,
    protocols: ['https:', 'http:'],
    doc: 'where to POST alerts the ntfy way (a node gone silent, the TLS certificate near expiry, a database behind its gates): a notify /hooks/<token> or an ntfy topic URL; plain http only on loopback',
  }),
  alert_group_wait: field.duration({
    env: 'EDGEGATE_ALERT_GROUP_WAIT',
    flag: 'alert-group-wait',
    default: '15s',
    max: '10m',
    doc: 'how long an alert of one kind (nodes silent, certificates expiring, the database behind) waits for others of its kind, to go out as one',
  }),
  log_level: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, {
    env: 'EDGEGATE_LOG_LEVEL',
    flag: 'log-level',
    default: 'info',
  }),
} satisfies Schema

export type ServeConfig = ConfigOf<typeof serveSchema>

/**
 * Cross-field rules of `serve`; throws ConfigError listing every violation. `invalid` names the
 * settings the loader already refused (their value is undefined here): a rule that reads one
 * is skipped, so it is reported once, by the loader.
 */
export function checkServeConfig(config: ServeConfig, invalid: ReadonlySet<string> = new Set()): ServeConfig {
  const problems: string[] = []
  const ok = (...keys: (keyof ServeConfig)[]) => keys.every((k) => !invalid.has(k))
  const mode = config.web_enforcement_mode
  const canary = config.web_enforcement_canary_nodes ?? []
  if (ok('web_enforcement_mode', 'web_shadow_enabled') && mode !== 'disabled' && !config.web_shadow_enabled) {
    problems.push(
      `web_enforcement_mode: ${mode} needs --web-shadow-enabled (the controller blocks what the shadow policy scores would_block)`,
    )
  }
  if (ok('web_enforcement_mode', 'web_enforcement_canary_nodes')) {
    if (mode === 'canary' && canary.length === 0) {
      problems.push('web_enforcement_canary_nodes: canary mode needs at least one TLS gate instance id')
    }
    if (mode !== 'canary' && canary.length > 0) {
      problems.push(`web_enforcement_canary_nodes: only used in canary mode (the mode is ${mode})`)
    }
  }
  if (ok('audit_retention') && config.audit_retention !== 0 && config.audit_retention < 86_400_000) {
    problems.push('audit_retention: at least 24h, or 0 to keep every entry')
  }
  if (
    ok('deleted_decision_retention') &&
    config.deleted_decision_retention !== 0 &&
    config.deleted_decision_retention < 86_400_000
  ) {
    problems.push('deleted_decision_retention: at least 24h, or 0 to keep deleted decisions')
  }
  if (ok('fingerprint_retention') && config.fingerprint_retention !== 0 && config.fingerprint_retention < 86_400_000) {
    problems.push('fingerprint_retention: at least 24h, or 0 to keep undecided aggregates')
  }
  const alertUrl = ok('alert_url') ? alertUrlProblem(config.alert_url) : undefined
  if (alertUrl) problems.push(alertUrl)
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

/**
 * `serve`'s settings with the cross-field rules: bad values and broken rules are reported
 * together (the kit's `loadWithChecks`), so fixing one does not reveal the next.
 */
export function loadServeConfig(options: AppConfigOptions): Loaded<typeof serveSchema> {
  return loadWithChecks(
    () => loadAppConfig('edgegate', serveSchema, options),
    (loaded, invalid) => ({ ...loaded, config: checkServeConfig(loaded.config, invalid) }),
  )
}

/** Why `alert_url` cannot be used, or undefined. */
export function alertUrlProblem(url: string | undefined): string | undefined {
  if (url === undefined) return undefined
  const u = new URL(url)
  if (u.protocol === 'http:' && !isLoopback(u.hostname.replace(/^\[|\]$/g, ''))) {
    return 'alert_url: plain http only on loopback (the URL carries the hook token)'
  }
  return undefined
}

/** `edgegate alert test`: where serve sends its alerts. */
export const alertSchema = { alert_url: serveSchema.alert_url } satisfies Schema

/** Flags of the admin CLIs (node, admin, decision, status, migrate): only the database. */
export const cliSchema = { database } satisfies Schema
export type CliConfig = ConfigOf<typeof cliSchema>

/** `edgegate status`: the database, and where serve listens (its control socket, else its address), to ask whether it answers. */
export const statusSchema = {
  database,
  listen: serveSchema.listen,
  control_socket: serveSchema.control_socket,
} satisfies Schema

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
