/**
 * Configuration of `serve` and `doctor`: command-line flags (and their environment variables)
 * plus the optional JSON file of the spec (`max_fingerprints`, `metrics_listen`,
 * `control_plane`). The only file that reads `process.env`.
 */
import { field } from '@gatehouse/kit/config.ts'
import {
  gateFileFields,
  gateFlagFields,
  loadGateDbPath,
  loadGateInputs,
  parseTrustedRange,
} from '@gatehouse/kit/gate-config.ts'
import type { SyncControlPlane } from '@gatehouse/kit/gate-sync.ts'
import { type AddressError, type ListenAddress, parseListenAddress } from '@gatehouse/kit/net.ts'

export const DEFAULT_DB = '/var/lib/sshproxy/sshproxy.db'
export const DEFAULT_CONFIG = '/etc/sshproxy/config.json'

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
export { parseTrustedRange }

/** Flags of `serve` and `doctor`, each with an environment variable. */
export const flagSchema = {
  route: field.list({
    flag: 'route',
    env: 'SSHPROXY_ROUTES',
    item: parseRoute,
    doc: "'LISTEN=BACKEND', repeatable (env: comma-separated)",
  }),
  ...gateFlagFields({
    prefix: 'SSHPROXY',
    db: DEFAULT_DB,
    config: DEFAULT_CONFIG,
    idleTimeout: '8h',
    maxConnections: 1024,
    ipRate: 1,
    ipBurst: 120,
    backendTimeoutDoc: "deadline to dial the backend and read its identification (also the startup probe's)",
  }),
  allow_unknown: field.boolean({
    flag: 'allow-unknown',
    env: 'SSHPROXY_ALLOW_UNKNOWN',
    default: false,
    doc: 'let clients with unknown fingerprints through (enrollment)',
  }),
  handshake_timeout: field.duration({
    flag: 'handshake-timeout',
    env: 'SSHPROXY_HANDSHAKE_TIMEOUT',
    default: '10s',
    min: '100ms',
    doc: 'deadline for the client identification and KEXINIT',
  }),
}

/** The JSON config file, strict (unknown keys stop startup). */
export const fileSchema = gateFileFields('SSHPROXY')

export type ControlPlaneConfig = SyncControlPlane & { syncIntervalMs: number }

export interface ServeConfig {
  routes: Route[]
  dbPath: string
  configPath: string
  /** Whether the config file existed (it is optional at the default path). */
  configFileFound: boolean
  /** A secret in a file every user may read: logged at start, shown by `doctor`. */
  warnings: string[]
  metricsListen?: ListenAddress
  allowUnknown: boolean
  /** Static bypass ranges (canonical CIDR), from --trusted-range and `trusted_ranges`. */
  trustedRanges: string[]
  /** Effective cap: -1 unlimited. */
  maxFingerprints: number
  handshakeTimeoutMs: number
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
  controlPlane?: ControlPlaneConfig
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
    allowUnknown: f.allow_unknown,
    trustedRanges: inputs.trustedRanges,
    maxFingerprints: inputs.maxFingerprints,
    handshakeTimeoutMs: f.handshake_timeout,
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
