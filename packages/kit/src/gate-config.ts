/**
 * The `serve` flags and config-file keys both gates (sshproxy, tlsgate) share, with each gate's
 * environment prefix and defaults, and the loading both do: flags, then the JSON file (optional
 * at its default path, required when named), the control_plane section, the metrics address and
 * the routes' listen addresses checked, every problem collected for one `ConfigError`.
 *
 * @example
 * const flagSchema = { route: ..., ...gateFlagFields({ prefix: 'TLSGATE', db: '/var/lib/tlsgate/tlsgate.db', ... }) }
 */
import { ConfigError, type ConfigOf, field, type Loaded, loadConfig, type Schema, secretExposure } from './config.ts'
import { controlPlaneFields, readControlPlaneSection } from './control-plane-config.ts'
import type { SyncControlPlane } from './gate-sync.ts'
import { type AddressError, type ListenAddress, parseCidr, parseListenAddress } from './net.ts'

export interface GateFlagDefaults {
  /** Environment prefix, e.g. `TLSGATE` (`TLSGATE_DB`, ...). */
  prefix: string
  db: string
  config: string
  idleTimeout: string
  maxConnections: number
  ipRate: number
  ipBurst: number
  /** `--backend-timeout`'s help, when the gate does more than dial in it (default: the dial alone). */
  backendTimeoutDoc?: string
}

/** A trusted (bypass) range as canonical CIDR text; a bare address is a /32 or /128. */
export function parseTrustedRange(text: string): string {
  return parseCidr(text).text
}

/** The shared `serve` flags (each with `<PREFIX>_<NAME>` in the environment). */
export function gateFlagFields(d: GateFlagDefaults) {
  const env = (name: string) => `${d.prefix}_${name}`
  return {
    db: field.string({ flag: 'db', env: env('DB'), default: d.db, minLength: 1, doc: 'SQLite database path' }),
    config: field.string({ flag: 'config', env: env('CONFIG'), default: d.config, doc: 'JSON config file' }),
    metrics_listen: field.string({
      flag: 'metrics-listen',
      env: env('METRICS_LISTEN'),
      doc: 'host:port for GET /metrics and /healthz; empty or unset disables',
    }),
    trusted_range: field.list({
      flag: 'trusted-range',
      env: env('TRUSTED_RANGES'),
      item: parseTrustedRange,
      doc: 'CIDR whose clients skip the fingerprint verdict (still rate limited), repeatable (env: comma-separated)',
    }),
    backend_timeout: field.duration({
      flag: 'backend-timeout',
      env: env('BACKEND_TIMEOUT'),
      default: '10s',
      min: '100ms',
      doc: d.backendTimeoutDoc ?? 'deadline to dial the backend',
    }),
    idle_timeout: field.duration({
      flag: 'idle-timeout',
      env: env('IDLE_TIMEOUT'),
      default: d.idleTimeout,
      doc: 'close a relayed session with no traffic either way for this long; 0 disables',
    }),
    splice_after: field.bytes({
      flag: 'splice-after',
      env: env('SPLICE_AFTER'),
      default: '1MiB',
      min: 0,
      doc: 'move a connection to the splice(2) helper once it has relayed this much (both ways); 0 keeps all in-process',
    }),
    splice_max: field.int({
      flag: 'splice-max',
      env: env('SPLICE_MAX'),
      default: 256,
      min: 0,
      doc: 'connections in splice helpers at once (one small process each); beyond, relayed in-process',
    }),
    drain_timeout: field.duration({
      flag: 'drain-timeout',
      env: env('DRAIN_TIMEOUT'),
      default: '30s',
      doc: 'on SIGTERM, how long open sessions may continue before they are closed',
    }),
    max_connections: field.int({
      flag: 'max-connections',
      env: env('MAX_CONNECTIONS'),
      default: d.maxConnections,
      min: 1,
      doc: 'concurrent connections across all routes (above: dropped, OVERLOAD)',
    }),
    ip_rate: field.number({
      flag: 'ip-rate',
      env: env('IP_RATE'),
      default: d.ipRate,
      min: 0.001,
      doc: 'sustained new connections per second per source IP',
    }),
    ip_burst: field.int({
      flag: 'ip-burst',
      env: env('IP_BURST'),
      default: d.ipBurst,
      min: 1,
      doc: 'burst of new connections per source IP (above the rate: dropped, RATELIMIT)',
    }),
    sighting_retention: field.duration({
      flag: 'sighting-retention',
      env: env('SIGHTING_RETENTION'),
      default: '192h',
      min: '1m',
      doc: 'drop sightings older than this (aggregates and verdicts stay)',
    }),
    log_level: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'silent'] as const, {
      flag: 'log-level',
      env: env('LOG_LEVEL'),
      default: 'info',
    }),
  }
}

/** The shared config-file keys. */
export function gateFileFields(prefix: string) {
  return {
    db: field.string({ minLength: 1, doc: `SQLite database path, as --db (the flag and ${prefix}_DB win)` }),
    max_fingerprints: field.int({ min: -1, default: 0, doc: 'stored-entry cap; 0 = 100000, -1 = unlimited' }),
    metrics_listen: field.string({ doc: 'as --metrics-listen (the flag wins)' }),
    trusted_ranges: field.list({ item: parseTrustedRange, doc: 'bypass CIDRs, added to --trusted-range' }),
    control_plane: controlPlaneFields(prefix),
  }
}

type BaseFlags = ReturnType<typeof gateFlagFields> & { route: ReturnType<typeof field.list> }
type BaseFile = ReturnType<typeof gateFileFields>

export interface GateInputs<F extends Schema, G extends Schema> {
  flags: Loaded<F>
  file: Loaded<G>
  configPath: string
  /** `--db` or `$<PREFIX>_DB` when given, else the config file's `db`, else the default path. */
  dbPath: string
  /** Whether the config file existed (it is optional at the default path). */
  configFileFound: boolean
  /** For the log and `doctor`: a secret in a file every user may read (kit `secretExposure`). */
  warnings: string[]
  metricsListen?: ListenAddress
  controlPlane?: SyncControlPlane & { syncIntervalMs: number }
  /** Static bypass ranges from the flag and the file, deduplicated. */
  trustedRanges: string[]
  /** `max_fingerprints` with 0 read as the default 100000. */
  maxFingerprints: number
  /** The control plane the gate syncs with, also with `inspect` and no credentials (`status`). */
  controlPlaneTarget?: { url: string; instanceId: string }
}

/**
 * Load flags and file; `check` adds the gate's own cross-checks to `errors`. Throws one
 * ConfigError listing every problem: a bad value and a rule between settings are named in one
 * run (the cross-checks run on what did load, and skip a setting whose value was refused, so it
 * is named once), except where the file could not be read or parsed at all.
 */
export function loadGateInputs<F extends BaseFlags & Schema, G extends BaseFile & Schema>(
  flagSchema: F,
  fileSchema: G,
  options: {
    flags: Record<string, unknown>
    env: Record<string, string | undefined>
    fileExists: (p: string) => boolean
    /**
     * For `status`, which reads the store and asks the running gate: what only serving needs may
     * be missing (a route, the control plane's credentials), as when the gate gets them from
     * flags or the environment of its service unit and the operator's shell has neither.
     */
    inspect?: boolean
  },
  check: (flags: ConfigOf<F>, errors: string[], invalid: ReadonlySet<string>) => void = () => {},
): GateInputs<F, G> {
  const errors: string[] = []
  let flags: Loaded<F> | undefined
  let badFlags: ReadonlySet<string> = new Set()
  try {
    flags = loadConfig(flagSchema, { flags: options.flags, env: options.env })
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    errors.push(...err.lines)
    if (err.partial) {
      flags = err.partial.loaded as Loaded<F>
      badFlags = err.partial.invalid
    }
  }
  const base = flags?.config as ConfigOf<BaseFlags> | undefined
  // A refused --config names no file to read: its error is enough.
  const configPath = badFlags.has('config') ? undefined : (base?.config ?? String(flagSchema.config.options.default))
  // The file is optional at its default path; a path the operator named must exist.
  const named = flags !== undefined && flags.sources.config !== 'default'
  const configFileFound = configPath !== undefined && options.fileExists(configPath)
  let file: Loaded<G> | undefined
  let badFile: ReadonlySet<string> = new Set()
  try {
    if (configPath !== undefined)
      file = loadConfig(fileSchema, { file: configPath, fileRequired: named, env: options.env })
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    errors.push(...err.lines)
    if (err.partial) {
      file = err.partial.loaded as Loaded<G>
      badFile = err.partial.invalid
    }
  }
  const fileConfig = file?.config as ConfigOf<BaseFile> | undefined
  const sectionErrors = errors.length
  const controlPlane =
    file && fileConfig
      ? readControlPlaneSection(fileConfig.control_plane ?? {}, file.sources, errors, !options.inspect, badFile)
      : undefined
  const cpSection = fileConfig?.control_plane
  const controlPlaneTarget =
    cpSection?.url !== undefined && cpSection.instance_id !== undefined && errors.length === sectionErrors
      ? { url: cpSection.url.replace(/\/+$/, ''), instanceId: cpSection.instance_id }
      : undefined
  const routes = (base?.route ?? []) as Array<{ name: string; listen: ListenAddress }>
  if (base && routes.length === 0 && !options.inspect && !badFlags.has('route'))
    errors.push('--route: at least one route is required (--route LISTEN=BACKEND)')
  const seen = new Set<string>()
  for (const r of routes) {
    const key = `${r.listen.host}:${r.listen.port}`
    if (seen.has(key) && r.listen.port !== 0) errors.push(`--route: listen address ${r.name} is used twice`)
    seen.add(key)
  }
  const metricsText = base?.metrics_listen ?? fileConfig?.metrics_listen
  let metricsListen: ListenAddress | undefined
  const metricsRefused = badFlags.has('metrics_listen') || badFile.has('metrics_listen')
  if (metricsText !== undefined && metricsText.trim() !== '' && !metricsRefused) {
    try {
      metricsListen = parseListenAddress(metricsText)
    } catch (err) {
      const where = base?.metrics_listen !== undefined ? '--metrics-listen' : 'metrics_listen'
      errors.push(`${where}: ${(err as AddressError).message}`)
    }
  }
  if (flags) check(flags.config, errors, badFlags)
  if (errors.length > 0 || !flags || !file || !base || !fileConfig || configPath === undefined)
    throw new ConfigError(errors)
  const max = fileConfig.max_fingerprints
  return {
    flags,
    file,
    configPath,
    dbPath: flags.sources.db === 'default' ? (fileConfig.db ?? base.db) : base.db,
    configFileFound,
    warnings: [...flags.warnings, ...file.warnings, ...keyExposure(controlPlane)],
    ...(metricsListen ? { metricsListen } : {}),
    ...(controlPlane ? { controlPlane } : {}),
    ...(controlPlaneTarget ? { controlPlaneTarget } : {}),
    trustedRanges: [...new Set([...(base.trusted_range ?? []), ...(fileConfig.trusted_ranges ?? [])])],
    maxFingerprints: max === 0 ? 100_000 : max,
  }
}

/** The control-plane client key, when every user of the host may read it. */
function keyExposure(cp: SyncControlPlane | undefined): string[] {
  if (cp?.auth.kind !== 'mtls') return []
  const exposed = secretExposure(cp.auth.clientKey, 'the control-plane client key (control_plane.client_key)')
  return exposed ? [exposed] : []
}

/**
 * The database of a gate's store commands (list, approve, ...): `--db`, else `$<PREFIX>_DB`, else
 * the `db` key of the config file (`--config`, `$<PREFIX>_CONFIG`, else the default path when it
 * exists; bin/<gate> names the file `npm start` writes), else the default path. Only the `db` key
 * is read: `serve` checks the rest of the file.
 */
export function loadGateDbPath(
  flagSchema: Pick<BaseFlags, 'db' | 'config'>,
  fileSchema: Pick<BaseFile, 'db'>,
  flags: Record<string, unknown>,
  env: Record<string, string | undefined> = process.env,
): string {
  const { config, sources } = loadConfig({ db: flagSchema.db, config: flagSchema.config }, { flags, env })
  if (sources.db !== 'default') return config.db
  const fromFile = loadConfig(
    { db: fileSchema.db },
    { file: config.config, fileRequired: sources.config !== 'default', ignoreUnknownFileKeys: true, env: {} },
  )
  return fromFile.config.db ?? config.db
}
