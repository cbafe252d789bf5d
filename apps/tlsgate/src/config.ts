/**
 * Configuration of `serve`, `doctor` and `status`: command-line flags (and their environment
 * variables) plus the optional JSON file (`max_fingerprints`, `metrics_listen`,
 * `trusted_ranges`, `control_plane`, as for the SSH gate). The only file that reads `process.env`.
 */
import { field } from '@gatehouse/kit/config.ts'
import { gateFileFields, gateFlagFields, loadGateDbPath, loadGateInputs } from '@gatehouse/kit/gate-config.ts'
import type { SyncControlPlane } from '@gatehouse/kit/gate-sync.ts'
import { type AddressError, type ListenAddress, parseListenAddress } from '@gatehouse/kit/net.ts'

export const DEFAULT_DB = '/var/lib/tlsgate/tlsgate.db'
export const DEFAULT_CONFIG = '/etc/tlsgate/config.json'

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

/** Flags of `serve` and `doctor`, each with an environment variable. */
export const flagSchema = {
  route: field.list({
    flag: 'route',
    env: 'TLSGATE_ROUTES',
    item: parseRoute,
    doc: "'[smtp:]LISTEN=BACKEND', repeatable (env: comma-separated)",
  }),
  ...gateFlagFields({
    prefix: 'TLSGATE',
    db: DEFAULT_DB,
    config: DEFAULT_CONFIG,
    idleTimeout: '15m',
    maxConnections: 4096,
    ipRate: 20,
    ipBurst: 200,
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
  hello_timeout: field.duration({
    flag: 'hello-timeout',
    env: 'TLSGATE_HELLO_TIMEOUT',
    default: '10s',
    min: '100ms',
    doc: 'deadline for the whole ClientHello (and the SMTP dialogue up to STARTTLS)',
  }),
}

/** The JSON config file, strict (unknown keys stop startup). */
export const fileSchema = {
  ...gateFileFields('TLSGATE'),
  smtp_namespace: field.string({
    pattern: /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    default: 'default',
    doc: 'SMTP namespace of the correlation reports (e.g. the mail domain this gate fronts)',
  }),
}

export interface ServeConfig {
  routes: Route[]
  dbPath: string
  configPath: string
  /** Whether the config file existed (it is optional at the default path). */
  configFileFound: boolean
  /** A secret in a file every user may read: logged at start, shown by `doctor`. */
  warnings: string[]
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
  /** Hand long transfers to the splice helper (kit `SpliceRelays`); absent: all in-process. */
  splice?: { afterBytes: number; max: number }
  drainTimeoutMs: number
  maxConnections: number
  ipRate: number
  ipBurst: number
  sightingRetentionMs: number
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent'
  controlPlane?: SyncControlPlane & { syncIntervalMs: number }
  /** The control plane's address and this gate's instance id, without credentials (`status`). */
  controlPlaneTarget?: { url: string; instanceId: string }
}

export interface LoadServeOptions {
  /** Flags parsed by the CLI, keyed by flag name (`metrics-listen`). */
  flags: Record<string, unknown>
  env?: Record<string, string | undefined>
  fileExists: (path: string) => boolean
  /** `status`: a route and the control plane's credentials may be missing (kit `loadGateInputs`). */
  inspect?: boolean
}

/** Load and cross-check everything `serve` needs; every problem is listed in one `ConfigError`. */
export function loadServeConfig(options: LoadServeOptions): ServeConfig {
  const inputs = loadGateInputs(flagSchema, fileSchema, { ...options, env: options.env ?? process.env })
  const f = inputs.flags.config
  return {
    routes: f.route ?? [],
    dbPath: inputs.dbPath,
    configPath: inputs.configPath,
    configFileFound: inputs.configFileFound,
    warnings: inputs.warnings,
    ...(inputs.metricsListen ? { metricsListen: inputs.metricsListen } : {}),
    enforceUnknown: f.enforce_unknown,
    proxyProtocol: f.proxy_protocol,
    trustedRanges: inputs.trustedRanges,
    maxFingerprints: inputs.maxFingerprints,
    smtpNamespace: inputs.file.config.smtp_namespace,
    helloTimeoutMs: f.hello_timeout,
    backendTimeoutMs: f.backend_timeout,
    idleTimeoutMs: f.idle_timeout,
    splice: { afterBytes: f.splice_after, max: f.splice_max },
    drainTimeoutMs: f.drain_timeout,
    maxConnections: f.max_connections,
    ipRate: f.ip_rate,
    ipBurst: f.ip_burst,
    sightingRetentionMs: f.sighting_retention,
    logLevel: f.log_level,
    ...(inputs.controlPlane ? { controlPlane: inputs.controlPlane } : {}),
    ...(inputs.controlPlaneTarget ? { controlPlaneTarget: inputs.controlPlaneTarget } : {}),
  }
}

/** The database of a store command (see `loadGateDbPath`). */
export function loadDbPath(flags: Record<string, unknown>, env = process.env): string {
  return loadGateDbPath(flagSchema, fileSchema, flags, env)
}
