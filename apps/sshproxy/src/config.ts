/**
 * Configuration of `serve` and `doctor`: command-line flags (and their environment variables)
 * plus the optional JSON file of the spec (`max_fingerprints`, `metrics_listen`,
 * `control_plane`). The only file that reads `process.env`.
 */
import { ConfigError, field, loadConfig } from '@gatehouse/kit/config.ts'
import { type AddressError, type ListenAddress, parseCidr, parseListenAddress } from '@gatehouse/kit/net.ts'

export const DEFAULT_DB = '/var/lib/sshproxy/sshproxy.db'
export const DEFAULT_CONFIG = '/etc/sshproxy/config.json'
/** `max_fingerprints` 0 or unset. */
export const DEFAULT_MAX_FINGERPRINTS = 100_000

export interface Route {
  /** The listen address as written: the `route` metric label. */
  name: string
  listen: ListenAddress
  backend: ListenAddress
}

export function parseRoute(text: string): Route {
  const eq = text.indexOf('=')
  if (eq === -1) throw new Error(`must be LISTEN=BACKEND (e.g. 0.0.0.0:22=127.0.0.1:2222), got ${JSON.stringify(text)}`)
  const [listenText, backendText] = [text.slice(0, eq).trim(), text.slice(eq + 1).trim()]
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
  return { name: listenText, listen, backend }
}

/** A trusted (bypass) range as canonical CIDR text; a bare address is a /32 or /128. */
export function parseTrustedRange(text: string): string {
  return parseCidr(text).text
}

/** Flags of `serve` and `doctor`, each with an environment variable. */
export const flagSchema = {
  route: field.list({
    flag: 'route',
    env: 'SSHPROXY_ROUTES',
    item: parseRoute,
    doc: "'LISTEN=BACKEND', repeatable (env: comma-separated)",
  }),
  db: field.string({ flag: 'db', env: 'SSHPROXY_DB', default: DEFAULT_DB, minLength: 1, doc: 'SQLite database path' }),
  config: field.string({ flag: 'config', env: 'SSHPROXY_CONFIG', default: DEFAULT_CONFIG, doc: 'JSON config file' }),
  metrics_listen: field.string({
    flag: 'metrics-listen',
    env: 'SSHPROXY_METRICS_LISTEN',
    doc: 'host:port for GET /metrics and /healthz; empty or unset disables',
  }),
  allow_unknown: field.boolean({
    flag: 'allow-unknown',
    env: 'SSHPROXY_ALLOW_UNKNOWN',
    default: false,
    doc: 'let clients with unknown fingerprints through (enrollment)',
  }),
  trusted_range: field.list({
    flag: 'trusted-range',
    env: 'SSHPROXY_TRUSTED_RANGES',
    item: parseTrustedRange,
    doc: 'CIDR whose clients skip the fingerprint verdict (still rate limited), repeatable (env: comma-separated)',
  }),
  handshake_timeout: field.duration({
    flag: 'handshake-timeout',
    env: 'SSHPROXY_HANDSHAKE_TIMEOUT',
    default: '10s',
    min: '100ms',
    doc: 'deadline for the client identification and KEXINIT',
  }),
  backend_timeout: field.duration({
    flag: 'backend-timeout',
    env: 'SSHPROXY_BACKEND_TIMEOUT',
    default: '10s',
    min: '100ms',
    doc: 'deadline to dial the backend and read its identification (also the startup probe)',
  }),
  idle_timeout: field.duration({
    flag: 'idle-timeout',
    env: 'SSHPROXY_IDLE_TIMEOUT',
    default: '8h',
    doc: 'close a relayed session with no traffic either way for this long; 0 disables',
  }),
  drain_timeout: field.duration({
    flag: 'drain-timeout',
    env: 'SSHPROXY_DRAIN_TIMEOUT',
    default: '30s',
    doc: 'on SIGTERM, how long open sessions may continue before they are closed',
  }),
  max_connections: field.int({
    flag: 'max-connections',
    env: 'SSHPROXY_MAX_CONNECTIONS',
    default: 1024,
    min: 1,
    doc: 'concurrent connections across all routes (above: dropped, OVERLOAD)',
  }),
  ip_rate: field.number({
    flag: 'ip-rate',
    env: 'SSHPROXY_IP_RATE',
    default: 1,
    min: 0.001,
    doc: 'sustained new connections per second per source IP',
  }),
  ip_burst: field.int({
    flag: 'ip-burst',
    env: 'SSHPROXY_IP_BURST',
    default: 120,
    min: 1,
    doc: 'burst of new connections per source IP (above the rate: dropped, RATELIMIT)',
  }),
  sighting_retention: field.duration({
    flag: 'sighting-retention',
    env: 'SSHPROXY_SIGHTING_RETENTION',
    default: '192h',
    min: '1m',
    doc: 'drop sightings older than this (aggregates and verdicts stay)',
  }),
  log_level: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'silent'] as const, {
    flag: 'log-level',
    env: 'SSHPROXY_LOG_LEVEL',
    default: 'info',
  }),
}

/** The JSON config file, strict (unknown keys stop startup). */
export const fileSchema = {
  db: field.string({ minLength: 1, doc: 'SQLite database path, as --db (the flag and SSHPROXY_DB win)' }),
  max_fingerprints: field.int({ min: -1, default: 0, doc: 'stored-entry cap; 0 = 100000, -1 = unlimited' }),
  metrics_listen: field.string({ doc: 'as --metrics-listen (the flag wins)' }),
  trusted_ranges: field.list({ item: parseTrustedRange, doc: 'bypass CIDRs, added to --trusted-range' }),
  control_plane: {
    url: field.url({ protocols: ['https:'], doc: 'control-plane base URL (HTTPS only); omit to disable sync' }),
    instance_id: field.string({ minLength: 1, doc: 'stable name of this gate instance (required with url)' }),
    token: field.string({ secret: true, env: 'SSHPROXY_CONTROL_PLANE_TOKEN', minLength: 1, doc: 'bearer token' }),
    client_cert: field.string({ minLength: 1, doc: 'mTLS client certificate path' }),
    client_key: field.string({ minLength: 1, doc: 'mTLS client key path' }),
    ca: field.string({ minLength: 1, doc: 'CA bundle verifying the control plane' }),
    server_name: field.string({ minLength: 1, doc: 'TLS server name when URL host and certificate differ' }),
    sync_interval: field.duration({ default: '30s', min: '1s', doc: 'how often to sync' }),
  },
}

export interface ControlPlaneConfig {
  url: string
  instanceId: string
  auth:
    | { kind: 'token'; token: string; ca?: string }
    | { kind: 'mtls'; clientCert: string; clientKey: string; ca: string }
  serverName?: string
  syncIntervalMs: number
}

export interface ServeConfig {
  routes: Route[]
  dbPath: string
  configPath: string
  /** Whether the config file existed (it is optional at the default path). */
  configFileFound: boolean
  metricsListen?: ListenAddress
  allowUnknown: boolean
  /** Static bypass ranges (canonical CIDR), from --trusted-range and `trusted_ranges`. */
  trustedRanges: string[]
  /** Effective cap: -1 unlimited. */
  maxFingerprints: number
  handshakeTimeoutMs: number
  backendTimeoutMs: number
  idleTimeoutMs: number
  drainTimeoutMs: number
  maxConnections: number
  ipRate: number
  ipBurst: number
  sightingRetentionMs: number
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent'
  controlPlane?: ControlPlaneConfig
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
  const controlPlane = file ? checkControlPlane(file, errors) : undefined
  if (flags && (flags.config.route ?? []).length === 0) {
    errors.push('--route: at least one route is required (--route LISTEN=BACKEND)')
  }
  const routes = flags?.config.route ?? []
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
    dbPath: flags.sources.db === 'default' ? (file.config.db ?? f.db) : f.db,
    configPath,
    configFileFound,
    ...(metricsListen ? { metricsListen } : {}),
    allowUnknown: f.allow_unknown,
    trustedRanges: [...new Set([...(f.trusted_range ?? []), ...(file.config.trusted_ranges ?? [])])],
    maxFingerprints: max === 0 ? DEFAULT_MAX_FINGERPRINTS : max,
    handshakeTimeoutMs: f.handshake_timeout,
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

/** Spec, Authentication 1-2: HTTPS only, instance_id with url, exactly one auth method. */
function checkControlPlane(
  file: ReturnType<typeof loadConfig<typeof fileSchema>>,
  errors: string[],
): ControlPlaneConfig | undefined {
  const cp = file.config.control_plane
  const given = Object.keys(file.sources).filter((k) => k.startsWith('control_plane.') && file.sources[k] !== 'default')
  if (cp.url === undefined) {
    if (given.length > 0) {
      errors.push(
        `control_plane.url: required when control_plane is configured (${given.join(', ')} set); omit the section to disable sync`,
      )
    }
    return undefined
  }
  const u = new URL(cp.url)
  if (u.username || u.password) errors.push('control_plane.url: must not carry credentials (use token or mTLS)')
  if (u.search || u.hash) errors.push('control_plane.url: must be a base URL without query or fragment')
  if (cp.instance_id === undefined) errors.push('control_plane.instance_id: required when control_plane.url is set')
  const mtlsParts = { client_cert: cp.client_cert, client_key: cp.client_key }
  const anyMtls = Object.values(mtlsParts).some((v) => v !== undefined)
  if (cp.token !== undefined && anyMtls) {
    errors.push('control_plane: configure exactly one auth method: token, or client_cert + client_key + ca (not both)')
    return undefined
  }
  if (cp.token === undefined && !anyMtls) {
    errors.push('control_plane: an auth method is required: token, or client_cert + client_key + ca')
    return undefined
  }
  if (anyMtls) {
    const missing = (['client_cert', 'client_key', 'ca'] as const).filter((k) => cp[k] === undefined)
    if (missing.length > 0) {
      errors.push(`control_plane: mutual TLS needs client_cert, client_key and ca (missing ${missing.join(', ')})`)
      return undefined
    }
  }
  if (cp.instance_id === undefined) return undefined
  return {
    url: cp.url.replace(/\/+$/, ''),
    instanceId: cp.instance_id,
    auth:
      cp.token !== undefined
        ? { kind: 'token', token: cp.token, ...(cp.ca ? { ca: cp.ca } : {}) }
        : { kind: 'mtls', clientCert: cp.client_cert!, clientKey: cp.client_key!, ca: cp.ca! },
    ...(cp.server_name ? { serverName: cp.server_name } : {}),
    syncIntervalMs: cp.sync_interval,
  }
}

/** `--db` and `--config` for the store commands (list, approve, ...), with their environment variables. */
export const dbSchema = { db: flagSchema.db, config: flagSchema.config }

/**
 * The database of a store command: `--db`, else `$SSHPROXY_DB`, else the `db` key of the config
 * file (`--config`, `$SSHPROXY_CONFIG`, else /etc/sshproxy/config.json when it exists; bin/sshproxy
 * names the file `npm start` writes), else the default path. Only the `db` key is read here:
 * `serve` checks the rest of the file.
 */
export function loadDbPath(flags: Record<string, unknown>, env = process.env): string {
  const { config, sources } = loadConfig(dbSchema, { flags, env })
  if (sources.db !== 'default') return config.db
  const fromFile = loadConfig(
    { db: fileSchema.db },
    { file: config.config, fileRequired: sources.config !== 'default', ignoreUnknownFileKeys: true, env: {} },
  )
  return fromFile.config.db ?? config.db
}
