/**
 * Configuration of `serve`, `doctor` and `status`: command-line flags (and their environment
 * variables) plus the optional JSON file (`max_fingerprints`, `metrics_listen`,
 * `trusted_ranges`, `control_plane`, as for the SSH gate). The only file that reads `process.env`.
 */
import { ConfigError, field, loadConfig } from '@gatehouse/kit/config.ts'
import { controlPlaneFields, readControlPlaneSection } from '@gatehouse/kit/control-plane-config.ts'
import type { SyncControlPlane } from '@gatehouse/kit/gate-sync.ts'
import { type AddressError, type ListenAddress, parseCidr, parseListenAddress } from '@gatehouse/kit/net.ts'

export const DEFAULT_DB = '/var/lib/tlsgate/tlsgate.db'
export const DEFAULT_CONFIG = '/etc/tlsgate/config.json'
/** `max_fingerprints` 0 or unset. */
export const DEFAULT_MAX_FINGERPRINTS = 100_000

/** What the backend speaks: TLS from the first byte, or SMTP upgraded with STARTTLS. */
export type RouteMode = 'tls' | 'smtp'

export interface Route {
  /** The listen address as written (with its `smtp:` prefix): the `route` metric label. */
  name: string
  mode: RouteMode
  listen: ListenAddress
  backend: ListenAddress
}

/** `LISTEN=BACKEND`, or `smtp:LISTEN=BACKEND` for SMTP with STARTTLS. */
export function parseRoute(text: string): Route {
  const smtp = text.startsWith('smtp:')
  const body = smtp ? text.slice(5) : text
  const eq = body.indexOf('=')
  if (eq === -1) {
    throw new Error(`must be [smtp:]LISTEN=BACKEND (e.g. 0.0.0.0:443=127.0.0.1:8443), got ${JSON.stringify(text)}`)
  }
  const [listenText, backendText] = [body.slice(0, eq).trim(), body.slice(eq + 1).trim()]
  let listen: ListenAddress
  let backend: ListenAddress
  try {
    listen = parseListenAddress(listenText)
    backend = parseListenAddress(backendText)
  } catch (err) {
    throw new Error((err as AddressError).message)
  }
  if (backend.port === 0) throw new Error(`backend ${backendText} needs a port`)
  if (backend.host === '0.0.0.0') throw new Error(`backend ${backendText} needs a host`)
  return { name: smtp ? `smtp:${listenText}` : listenText, mode: smtp ? 'smtp' : 'tls', listen, backend }
}

const trustedRange = (text: string) => parseCidr(text).text

/** Flags of `serve`, `doctor` and `status`, each with an environment variable. */
export const flagSchema = {
  route: field.list({
    flag: 'route',
    env: 'TLSGATE_ROUTES',
    item: parseRoute,
    doc: "'[smtp:]LISTEN=BACKEND', repeatable (env: comma-separated)",
  }),
  db: field.string({ flag: 'db', env: 'TLSGATE_DB', default: DEFAULT_DB, minLength: 1, doc: 'SQLite database path' }),
  config: field.string({ flag: 'config', env: 'TLSGATE_CONFIG', default: DEFAULT_CONFIG, doc: 'JSON config file' }),
  metrics_listen: field.string({
    flag: 'metrics-listen',
    env: 'TLSGATE_METRICS_LISTEN',
    doc: 'host:port for GET /metrics and /healthz; empty or unset disables',
  }),
  enforce_unknown: field.boolean({
    flag: 'enforce-unknown',
    env: 'TLSGATE_ENFORCE_UNKNOWN',
    default: false,
    doc: 'refuse unknown and pending fingerprints too (private services); by default only blocked ones are refused',
  }),
  proxy_protocol: field.boolean({
    flag: 'proxy-protocol',
    env: 'TLSGATE_PROXY_PROTOCOL',
    default: false,
    doc: 'send a PROXY protocol v2 header to the backend so it logs the real client address',
  }),
  trusted_range: field.list({
    flag: 'trusted-range',
    env: 'TLSGATE_TRUSTED_RANGES',
    item: trustedRange,
    doc: 'CIDR whose clients skip the fingerprint verdict (still rate limited), repeatable',
  }),
  hello_timeout: field.duration({
    flag: 'hello-timeout',
    env: 'TLSGATE_HELLO_TIMEOUT',
    default: '10s',
    min: '100ms',
    doc: 'deadline for the whole ClientHello (and the SMTP dialogue up to STARTTLS)',
  }),
  backend_timeout: field.duration({
    flag: 'backend-timeout',
    env: 'TLSGATE_BACKEND_TIMEOUT',
    default: '10s',
    min: '100ms',
    doc: 'deadline to connect to the backend',
  }),
  idle_timeout: field.duration({
    flag: 'idle-timeout',
    env: 'TLSGATE_IDLE_TIMEOUT',
    default: '15m',
    doc: 'close a relayed connection with no traffic either way for this long; 0 disables',
  }),
  drain_timeout: field.duration({
    flag: 'drain-timeout',
    env: 'TLSGATE_DRAIN_TIMEOUT',
    default: '30s',
    doc: 'on SIGTERM, how long open connections may continue before they are closed',
  }),
  max_connections: field.int({
    flag: 'max-connections',
    env: 'TLSGATE_MAX_CONNECTIONS',
    default: 4096,
    min: 1,
    doc: 'concurrent connections across all routes (above: dropped, OVERLOAD)',
  }),
  ip_rate: field.number({
    flag: 'ip-rate',
    env: 'TLSGATE_IP_RATE',
    default: 20,
    min: 0.001,
    doc: 'sustained new connections per second per source IP',
  }),
  ip_burst: field.int({
    flag: 'ip-burst',
    env: 'TLSGATE_IP_BURST',
    default: 200,
    min: 1,
    doc: 'burst of new connections per source IP (above the rate: dropped, RATELIMIT)',
  }),
  sighting_retention: field.duration({
    flag: 'sighting-retention',
    env: 'TLSGATE_SIGHTING_RETENTION',
    default: '192h',
    min: '1m',
    doc: 'drop sightings older than this (aggregates and verdicts stay)',
  }),
  log_level: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'silent'] as const, {
    flag: 'log-level',
    env: 'TLSGATE_LOG_LEVEL',
    default: 'info',
  }),
}

/** The JSON config file, strict (unknown keys stop startup). */
export const fileSchema = {
  max_fingerprints: field.int({ min: -1, default: 0, doc: 'stored-entry cap; 0 = 100000, -1 = unlimited' }),
  metrics_listen: field.string({ doc: 'as --metrics-listen (the flag wins)' }),
  trusted_ranges: field.list({ item: trustedRange, doc: 'bypass CIDRs, added to --trusted-range' }),
  smtp_namespace: field.string({
    pattern: /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    default: 'default',
    doc: 'SMTP namespace of the correlation reports (e.g. the mail domain this gate fronts)',
  }),
  control_plane: controlPlaneFields('TLSGATE'),
}

export interface ServeConfig {
  routes: Route[]
  dbPath: string
  configPath: string
  /** Whether the config file existed (it is optional at the default path). */
  configFileFound: boolean
  metricsListen?: ListenAddress
  enforceUnknown: boolean
  proxyProtocol: boolean
  /** Static bypass ranges (canonical CIDR), from --trusted-range and `trusted_ranges`. */
  trustedRanges: string[]
  /** Effective cap: -1 unlimited. */
  maxFingerprints: number
  smtpNamespace: string
  helloTimeoutMs: number
  backendTimeoutMs: number
  idleTimeoutMs: number
  drainTimeoutMs: number
  maxConnections: number
  ipRate: number
  ipBurst: number
  sightingRetentionMs: number
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent'
  controlPlane?: SyncControlPlane & { syncIntervalMs: number }
}

export interface LoadServeOptions {
  /** Flags parsed by the CLI, keyed by flag name (`metrics-listen`). */
  flags: Record<string, unknown>
  env?: Record<string, string | undefined>
  fileExists: (path: string) => boolean
}

/** Load and cross-check everything `serve` needs; every problem is listed in one `ConfigError`. */
export function loadServeConfig(options: LoadServeOptions): ServeConfig {
  const env = options.env ?? process.env
  const errors: string[] = []
  let flags: ReturnType<typeof loadConfig<typeof flagSchema>> | undefined
  try {
    flags = loadConfig(flagSchema, { flags: options.flags, env })
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    errors.push(...err.lines)
  }
  const configPath = flags?.config.config ?? DEFAULT_CONFIG
  // The file is optional at its default path; a path the operator named must exist.
  const named = flags !== undefined && flags.sources.config !== 'default'
  const configFileFound = options.fileExists(configPath)
  let file: ReturnType<typeof loadConfig<typeof fileSchema>> | undefined
  try {
    file = loadConfig(fileSchema, { file: configPath, fileRequired: named, env })
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    errors.push(...err.lines)
  }
  const controlPlane = file ? readControlPlaneSection(file.config.control_plane, file.sources, errors) : undefined
  const routes = flags?.config.route ?? []
  if (flags && routes.length === 0) errors.push('--route: at least one route is required (--route LISTEN=BACKEND)')
  const seen = new Set<string>()
  for (const r of routes) {
    const key = `${r.listen.host}:${r.listen.port}`
    if (seen.has(key) && r.listen.port !== 0) errors.push(`--route: listen address ${r.name} is used twice`)
    seen.add(key)
  }
  const metricsText = flags?.config.metrics_listen ?? file?.config.metrics_listen
  let metricsListen: ListenAddress | undefined
  if (metricsText !== undefined && metricsText.trim() !== '') {
    try {
      metricsListen = parseListenAddress(metricsText)
    } catch (err) {
      const where = flags?.config.metrics_listen !== undefined ? '--metrics-listen' : 'metrics_listen'
      errors.push(`${where}: ${(err as AddressError).message}`)
    }
  }
  if (errors.length > 0 || !flags || !file) throw new ConfigError(errors)
  const f = flags.config
  const max = file.config.max_fingerprints
  return {
    routes,
    dbPath: f.db,
    configPath,
    configFileFound,
    ...(metricsListen ? { metricsListen } : {}),
    enforceUnknown: f.enforce_unknown,
    proxyProtocol: f.proxy_protocol,
    trustedRanges: [...new Set([...(f.trusted_range ?? []), ...(file.config.trusted_ranges ?? [])])],
    maxFingerprints: max === 0 ? DEFAULT_MAX_FINGERPRINTS : max,
    smtpNamespace: file.config.smtp_namespace,
    helloTimeoutMs: f.hello_timeout,
    backendTimeoutMs: f.backend_timeout,
    idleTimeoutMs: f.idle_timeout,
    drainTimeoutMs: f.drain_timeout,
    maxConnections: f.max_connections,
    ipRate: f.ip_rate,
    ipBurst: f.ip_burst,
    sightingRetentionMs: f.sighting_retention,
    logLevel: f.log_level,
    ...(controlPlane ? { controlPlane } : {}),
  }
}

/** `--db` for the store commands (list, approve, ...), with its environment variable. */
export const dbSchema = { db: flagSchema.db }

export function loadDbPath(flags: Record<string, unknown>, env = process.env): string {
  return loadConfig(dbSchema, { flags, env }).config.db
}
