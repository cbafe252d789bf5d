/**
 * The artsvc configuration: every `ARTSVC_*` variable of the spec with its default, plus
 * `ARTSVC_DATABASE_URL`, the OIDC client settings and the edge key-set URL. This is the
 * only file that reads `process.env`.
 */
import { join } from 'node:path'
import { loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import {
  ConfigError,
  type ConfigOf,
  field,
  type Loaded,
  type LoadOptions,
  loadConfig,
  loadWithChecks,
  settingName,
} from '@gatehouse/kit/config.ts'
import { databaseUrlMayHoldSecret } from '@gatehouse/kit/db/url.ts'
import { isLoopback } from '@gatehouse/kit/net.ts'
import { type PublisherViewers, parsePublisherViewers } from './grants/publisher-viewers-setting.ts'
import { ID_PATTERN } from './id-pattern.ts'

const durationOpts = { min: '1s' } as const

export const configSchema = {
  publicUrl: field.url({
    env: 'ARTSVC_PUBLIC_URL',
    required: true,
    protocols: ['https:', 'http:'],
    doc: 'management origin',
  }),
  contentUrl: field.url({
    env: 'ARTSVC_CONTENT_URL',
    required: true,
    protocols: ['https:', 'http:'],
    doc: 'content origin; a different hostname from ARTSVC_PUBLIC_URL',
  }),
  cookieSecret: field.string({
    env: 'ARTSVC_COOKIE_SECRET',
    secret: true,
    required: true,
    doc: 'at least 32 random bytes (base64 or text); keys tickets and share-session cookies',
  }),
  authMode: field.enum(['oidc', 'edge_access'], { env: 'ARTSVC_AUTH_MODE', default: 'oidc' }),
  listen: field.listen({ env: 'ARTSVC_LISTEN', flag: 'listen', default: '127.0.0.1:18100', doc: 'host:port' }),
  databaseUrl: field.string({
    env: 'ARTSVC_DATABASE_URL',
    // A PostgreSQL URL may carry a password; a sqlite: path is no secret to warn about.
    secret: databaseUrlMayHoldSecret,
    doc: 'sqlite:<file> or postgres://...; default sqlite:<storage root>/artsvc.db',
  }),
  storageBackend: field.enum(['filesystem', 's3'], { env: 'ARTSVC_STORAGE_BACKEND', default: 'filesystem' }),
  storageRoot: field.string({
    env: 'ARTSVC_STORAGE_ROOT',
    default: '/var/lib/artsvc/artifacts',
    doc: 'filesystem storage, or local staging space in S3 mode',
  }),
  s3Bucket: field.string({ env: 'ARTSVC_S3_BUCKET', doc: 'existing bucket; required in S3 mode' }),
  s3Prefix: field.string({ env: 'ARTSVC_S3_PREFIX', default: '', doc: 'object-key prefix' }),
  s3Region: field.string({ env: 'ARTSVC_S3_REGION', default: 'us-east-1' }),
  s3Endpoint: field.url({
    env: 'ARTSVC_S3_ENDPOINT',
    protocols: ['https:', 'http:'],
    doc: 'plain HTTP only on loopback',
  }),
  s3UsePathStyle: field.boolean({ env: 'ARTSVC_S3_USE_PATH_STYLE', default: false }),
  s3Timeout: field.duration({
    env: 'ARTSVC_S3_TIMEOUT',
    default: '20s',
    min: '100ms',
    doc: 'an S3 request that connects or moves no byte for this long fails (tried three times)',
  }),
  oidcIssuer: field.url({ env: 'ARTSVC_OIDC_ISSUER', protocols: ['https:', 'http:'], doc: 'OpenID issuer URL' }),
  oidcClientId: field.string({ env: 'ARTSVC_OIDC_CLIENT_ID' }),
  oidcClientSecret: field.string({ env: 'ARTSVC_OIDC_CLIENT_SECRET', secret: true }),
  oauthAudience: field.string({ env: 'ARTSVC_OAUTH_AUDIENCE', doc: 'required audience of bearer access tokens' }),
  oauthScope: field.string({ env: 'ARTSVC_OAUTH_SCOPE', default: 'artsvc:mcp', doc: 'required bearer token scope' }),
  gatewayOauthSubject: field.string({
    env: 'ARTSVC_GATEWAY_OAUTH_SUBJECT',
    doc: "exact subject of the gateway's client-credentials token that may send X-Gateway-OAuth-Subject",
  }),
  publisherViewers: field.string({
    env: 'ARTSVC_PUBLISHER_VIEWERS',
    doc: 'JSON object: publisher subject -> array of subjects that get a viewer grant on what it publishes',
  }),
  edgeAccessTeamDomain: field.url({
    env: 'ARTSVC_EDGE_ACCESS_TEAM_DOMAIN',
    protocols: ['https:', 'http:'],
    doc: 'HTTPS team origin (issuer)',
  }),
  edgeAccessAud: field.string({ env: 'ARTSVC_EDGE_ACCESS_AUD', doc: 'exact audience tag' }),
  edgeAccessJwksUrl: field.url({
    env: 'ARTSVC_EDGE_ACCESS_JWKS_URL',
    protocols: ['https:', 'http:'],
    doc: 'team key set; default <team domain>/cdn-cgi/access/certs',
  }),
  adminSubjects: field.list({ env: 'ARTSVC_ADMIN_SUBJECTS', default: [] as string[] }),
  adminGroups: field.list({ env: 'ARTSVC_ADMIN_GROUPS', default: [] as string[] }),
  httpLane: field.boolean({
    env: 'ARTSVC_HTTP_LANE',
    default: true,
    doc: "answer cached content in the kit's HTTP lane (false: behind node:http only)",
  }),
  maxBundleBytes: field.bytes({ env: 'ARTSVC_MAX_BUNDLE_BYTES', default: 26_214_400, min: 1024 }),
  maxFiles: field.int({ env: 'ARTSVC_MAX_FILES', default: 500, min: 1, max: 100_000 }),
  uploadTtl: field.duration({ env: 'ARTSVC_UPLOAD_TTL', default: '15m', ...durationOpts }),
  viewerTicketTtl: field.duration({ env: 'ARTSVC_VIEWER_TICKET_TTL', default: '5m', ...durationOpts }),
  sessionTtl: field.duration({ env: 'ARTSVC_SESSION_TTL', default: '12h', ...durationOpts }),
  shareSessionTtl: field.duration({ env: 'ARTSVC_SHARE_SESSION_TTL', default: '1h', ...durationOpts }),
  maintenanceInterval: field.duration({ env: 'ARTSVC_MAINTENANCE_INTERVAL', default: '1h', ...durationOpts }),
  auditRetention: field.duration({ env: 'ARTSVC_AUDIT_RETENTION', default: '8760h', ...durationOpts }),
  logLevel: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    env: 'ARTSVC_LOG_LEVEL',
    default: 'info',
  }),
}

export type ArtsvcConfig = ConfigOf<typeof configSchema> & {
  /** Derived: origins and hosts of the two URLs, the database URL with its default applied. */
  publicOrigin: string
  contentOrigin: string
  publicHost: string
  contentHost: string
  database: string
  /** ARTSVC_PUBLISHER_VIEWERS, parsed. */
  publisherViewerMap: PublisherViewers
}

const LOOPBACK_NAMES = /^(localhost|[a-z0-9-]+\.localhost)$/i

/** Whether a URL's host is a loopback address or name (the only place plain HTTP is allowed). */
export function isLoopbackUrl(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return LOOPBACK_NAMES.test(host) || isLoopback(host)
}

/**
 * Load and cross-check; throws ConfigError listing every problem: bad values and broken
 * cross-field rules together (`loadWithChecks`), so fixing one does not reveal the next.
 */
export function loadArtsvcConfig(options: LoadOptions): ArtsvcConfig {
  return loadWithChecks(
    () => loadConfig(configSchema, options),
    ({ config, sources, labels, file }, invalid) => finishConfig(config, invalid, { sources, labels, file }),
  )
}

/**
 * Cross-field checks and derived values (also used by tests building configs in code).
 * `invalid` names the settings the loader already refused (their value is undefined here, as
 * is a missing required one): a rule that reads one skips itself, a rule that only asks
 * whether a setting was given counts it as given.
 */
export function finishConfig(
  config: ConfigOf<typeof configSchema>,
  invalid: ReadonlySet<string> = new Set(),
  origin: Partial<Pick<Loaded<typeof configSchema>, 'sources' | 'labels' | 'file'>> = {},
): ArtsvcConfig {
  const errors: string[] = []
  // Each setting named the way it was given: `contentUrl (in /etc/gatehouse/artsvc.json)`,
  // `--listen`, else its variable (also when it was not given: that is how to give it).
  const n = (key: keyof typeof configSchema): string => settingName(configSchema, origin, key)
  const given = (key: keyof typeof configSchema) => config[key] !== undefined || invalid.has(key)
  const url = (value: string | undefined) => (value === undefined ? undefined : new URL(value))
  const pub = url(config.publicUrl)
  const content = url(config.contentUrl)
  for (const [name, u] of [
    [n('publicUrl'), pub],
    [n('contentUrl'), content],
  ] as const) {
    if (u === undefined) continue
    if (u.protocol !== 'https:' && !isLoopbackUrl(u))
      errors.push(`${name}: must use https (plain http only on loopback)`)
    if (u.pathname !== '/' || u.search || u.hash || u.username) errors.push(`${name}: must be an origin without a path`)
  }
  if (pub && content && pub.hostname.toLowerCase() === content.hostname.toLowerCase()) {
    errors.push(`${n('contentUrl')}: must use a different hostname from ${n('publicUrl')}`)
  }
  if (config.cookieSecret !== undefined && Buffer.byteLength(config.cookieSecret) < 32)
    errors.push(`${n('cookieSecret')}: must be at least 32 bytes`)
  if (config.storageBackend === 's3') {
    if (!given('s3Bucket')) errors.push(`${n('s3Bucket')}: required when ${n('storageBackend')} is s3`)
    if (config.s3Endpoint) {
      const e = new URL(config.s3Endpoint)
      if (e.protocol !== 'https:' && !isLoopbackUrl(e))
        errors.push(`${n('s3Endpoint')}: must use https (plain http only on loopback)`)
    }
  }
  if (config.s3Prefix && !/^[A-Za-z0-9!_.*'()/-]*$/.test(config.s3Prefix)) {
    errors.push(`${n('s3Prefix')}: may only hold letters, digits and !_.*'()/-`)
  }
  const httpsOrLoopback = (name: string, value: string | undefined) => {
    if (value && new URL(value).protocol !== 'https:' && !isLoopbackUrl(new URL(value))) {
      errors.push(`${name}: must use https (plain http only on loopback)`)
    }
  }
  httpsOrLoopback(n('oidcIssuer'), config.oidcIssuer)
  httpsOrLoopback(n('edgeAccessTeamDomain'), config.edgeAccessTeamDomain)
  httpsOrLoopback(n('edgeAccessJwksUrl'), config.edgeAccessJwksUrl)
  // An unknown ARTSVC_AUTH_MODE is already reported: which settings it needs is then unknown.
  if (config.authMode === 'oidc') {
    for (const key of ['oidcIssuer', 'oidcClientId', 'oidcClientSecret'] as const) {
      if (!given(key) || config[key] === '') errors.push(`${n(key)}: required when ${n('authMode')} is oidc`)
    }
  } else if (config.authMode === 'edge_access') {
    if (!given('edgeAccessTeamDomain'))
      errors.push(`${n('edgeAccessTeamDomain')}: required when ${n('authMode')} is edge_access`)
    if (!given('edgeAccessAud') || config.edgeAccessAud === '')
      errors.push(`${n('edgeAccessAud')}: required when ${n('authMode')} is edge_access`)
  }
  if (config.oauthAudience && !given('oidcIssuer'))
    errors.push(`${n('oidcIssuer')}: required when ${n('oauthAudience')} is set`)
  if (config.oauthScope !== undefined && !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(config.oauthScope))
    errors.push(`${n('oauthScope')}: must be one scope token`)
  const viewers = parsePublisherViewers(config.publisherViewers)
  errors.push(...viewers.problems)
  if (errors.length > 0) throw new ConfigError(errors)
  // Only through loadWithChecks, whose own lines already name what is missing or refused.
  if (pub === undefined || content === undefined || config.cookieSecret === undefined || invalid.size > 0)
    throw new ConfigError([])
  return {
    ...config,
    publisherViewerMap: viewers.value,
    publicOrigin: pub.origin,
    contentOrigin: content.origin,
    publicHost: pub.host.toLowerCase(),
    contentHost: content.host.toLowerCase(),
    database: backupDatabaseUrl(config),
  }
}

/** `artsvc backup`: only where the database is (the server's file, flags and variables; the rest is ignored). */
export const backupSchema = {
  databaseUrl: field.string({
    env: 'ARTSVC_DATABASE_URL',
    flag: 'database',
    secret: databaseUrlMayHoldSecret,
    doc: 'sqlite:<file> or postgres://...; default sqlite:<storage root>/artsvc.db',
  }),
  storageRoot: field.string({
    env: 'ARTSVC_STORAGE_ROOT',
    flag: 'storage-root',
    default: '/var/lib/artsvc/artifacts',
    doc: "the server's storage root, which holds the database by default",
  }),
}

/** The database URL `artsvc backup` copies: `serve`'s default applied. */
export function backupDatabaseUrl(config: ConfigOf<typeof backupSchema>): string {
  return config.databaseUrl ?? `sqlite:${join(config.storageRoot, 'artsvc.db')}`
}

/** `artsvc publish`: where to publish and with which credentials (environment only, flags override). */
export const publishSchema = {
  url: field.url({
    env: 'ARTSVC_URL',
    flag: 'url',
    required: true,
    protocols: ['https:', 'http:'],
    doc: 'management URL',
  }),
  token: field.string({
    env: 'ARTSVC_TOKEN',
    secret: true,
    required: true,
    doc: 'OAuth access token (default: the one artsvc login kept for the URL)',
  }),
  clientCert: field.string({ env: 'ARTSVC_CLIENT_CERT', doc: 'PEM client certificate (mTLS at the proxy)' }),
  clientKey: field.string({ env: 'ARTSVC_CLIENT_KEY', doc: 'PEM client key' }),
  caFile: field.string({ env: 'ARTSVC_CA_FILE', doc: 'PEM CA bundle to trust' }),
  title: field.string({
    flag: 'title',
    doc: "artifact title (required for a new artifact; a new version keeps the artifact's)",
  }),
  zip: field.string({
    flag: 'zip',
    required: true,
    doc: 'ZIP file, or a folder to zip on the fly (linked to its artifact by .artsvc.json)',
  }),
  entrypoint: field.string({
    flag: 'entrypoint',
    doc: "file opened by the viewer (default index.html; a new version keeps the artifact's)",
  }),
  artifact: field.string({ flag: 'artifact', doc: 'publish a new version of this artifact' }),
  progress: field.enum(['auto', 'always', 'never'], {
    flag: 'progress',
    default: 'auto',
    doc: 'progress bar on stderr',
  }),
}

export type PublishConfig = ConfigOf<typeof publishSchema>

/** `artsvc mcp-bridge`: the loopback listener and the mTLS material towards the management URL. */
export const bridgeSchema = {
  listen: field.string({
    env: 'ARTSVC_BRIDGE_LISTEN',
    flag: 'listen',
    default: '127.0.0.1:18101',
    doc: 'loopback host:port the bridge listens on',
  }),
  url: field.url({ env: 'ARTSVC_URL', flag: 'url', required: true, protocols: ['https:'], doc: 'management URL' }),
  clientCert: field.string({ env: 'ARTSVC_CLIENT_CERT', required: true, doc: 'PEM client certificate' }),
  clientKey: field.string({ env: 'ARTSVC_CLIENT_KEY', required: true, doc: 'PEM client key' }),
  caFile: field.string({ env: 'ARTSVC_CA_FILE', doc: 'PEM CA bundle to trust (default: the system store)' }),
  logLevel: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    env: 'ARTSVC_LOG_LEVEL',
    default: 'info',
  }),
}

/** `flags` as the CLI parsed them, keyed by flag name. */
export function loadBridgeConfig(flags: Record<string, unknown>): ConfigOf<typeof bridgeSchema> {
  return loadConfig(bridgeSchema, { flags, env: process.env, configFile: false }).config
}

/** `flags` as the CLI parsed them; `env` may add the token `artsvc login` stored. */
export function loadPublishConfig(flags: Record<string, unknown>, env = process.env): PublishConfig {
  return loadWithChecks(
    () => loadConfig(publishSchema, { flags, env, configFile: false }),
    ({ config, sources }) => {
      const errors: string[] = []
      if ((config.clientCert === undefined) !== (config.clientKey === undefined)) {
        errors.push('ARTSVC_CLIENT_CERT and ARTSVC_CLIENT_KEY: set both or neither')
      }
      // Undefined when missing or refused: the loader's own line says so.
      const u = config.url === undefined ? undefined : new URL(config.url)
      if (u && u.protocol !== 'https:' && !isLoopbackUrl(u))
        errors.push(`${sources.url === 'flag' ? '--url' : 'ARTSVC_URL'}: must use https (plain http only on loopback)`)
      if (config.artifact !== undefined && !new RegExp(ID_PATTERN).test(config.artifact))
        errors.push(
          `--artifact: ${JSON.stringify(config.artifact)} is not an artifact id (16 letters, digits, - or _; artsvc list shows them)`,
        )
      if (errors.length > 0) throw new ConfigError(errors)
      return config
    },
  )
}

/**
 * The server's flags, environment and JSON file (`--config FILE`, else `$ARTSVC_CONFIG`, else
 * `/etc/gatehouse/artsvc.json` when it exists; keys as in the schema). Kept here: this is the one
 * file that reads process.env.
 */
export function loadServerConfig(
  flags: Record<string, unknown>,
  configFile: string | undefined,
): ArtsvcConfig & { warnings: string[] } {
  return loadWithChecks(
    () => loadAppConfig('artsvc', configSchema, { flags, config: configFile, env: process.env }),
    ({ config, warnings, sources, labels, file }, invalid) => ({
      ...finishConfig(config, invalid, { sources, labels, file }),
      warnings,
    }),
  )
}

export function stderrIsTerminal(): boolean {
  return process.stderr.isTTY === true
}
