/**
 * The service configuration: flags > NOTIFY_* environment > JSON file > defaults. The only file that
 * reads process.env. Flags use the spec's single-dash form (`-listen`, `-hook-id`); the
 * kit's parser also takes `--listen` and `--listen=value`.
 */
import { type AppConfigOptions, loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { ConfigError, type ConfigOf, field, loadWithChecks, settingName } from '@gatehouse/kit/config.ts'
import type { Source } from '@gatehouse/kit/config-fields.ts'
import { databaseUrlMayHoldSecret } from '@gatehouse/kit/db/url.ts'
import { isLoopback, parseListenAddress } from '@gatehouse/kit/net.ts'
import { CHANNEL_NAME, USERNAME } from './name-patterns.ts'

export const schema = {
  listen: field.listen({
    env: 'NOTIFY_LISTEN',
    flag: 'listen',
    default: '127.0.0.1:8080',
    doc: 'host:port of the HTTP listener',
  }),
  database: field.string({
    env: 'NOTIFY_DATABASE_URL',
    flag: 'database',
    // A PostgreSQL URL may carry its password: NOTIFY_DATABASE_URL_FILE (or `database_file`) keeps
    // it out of the environment, and a config file every user may read that holds one is warned about.
    secret: databaseUrlMayHoldSecret,
    default: 'sqlite:notify.db',
    doc: 'sqlite:<file> (one node) or postgres://user@host/db (several nodes)',
  }),
  hookToken: field.string({
    env: 'NOTIFY_HOOK_TOKEN',
    flag: 'hook-id',
    secret: true,
    minLength: 16,
    doc: 'development hook token: /hooks/<token> and Bearer <token> publish to the development channel',
  }),
  hookChannel: field.string({
    env: 'NOTIFY_HOOK_CHANNEL',
    flag: 'hook-channel',
    default: 'general',
    pattern: CHANNEL_NAME,
    patternDoc: 'a channel name (lowercase letters, digits, - and _)',
    doc: 'channel of the development hook (created public when missing)',
  }),
  readerUsername: field.string({
    env: 'NOTIFY_READER_USERNAME',
    flag: 'reader-username',
    doc: 'bootstrap administrator; enables reader authentication together with the password',
  }),
  readerPassword: field.string({
    env: 'NOTIFY_READER_PASSWORD',
    secret: true,
    minLength: 12,
    doc: 'bootstrap administrator password (at least 12 characters)',
  }),
  publicUrl: field.url({
    env: 'NOTIFY_PUBLIC_URL',
    flag: 'public-url',
    protocols: ['http:', 'https:'],
    doc: 'exact browser origin (scheme://host[:port]); required when authentication is on',
  }),
  sessionTtl: field.duration({
    env: 'NOTIFY_SESSION_TTL',
    flag: 'session-ttl',
    default: '168h',
    min: '5m',
    max: '8760h',
    doc: 'a reader session ends after this long without use (each use moves its end forward, at most once an hour)',
  }),
  sessionMaxAge: field.duration({
    env: 'NOTIFY_SESSION_MAX_AGE',
    flag: 'session-max-age',
    default: '720h',
    min: '5m',
    max: '8760h',
    doc: 'a reader session ends this long after sign-in however much it is used (at least NOTIFY_SESSION_TTL; equal to it: sessions are not renewed)',
  }),
  retention: field.duration({
    env: 'NOTIFY_RETENTION',
    flag: 'retention',
    default: '0',
    doc: 'notifications older than this are removed with their activity, unless still firing or acknowledged (they go once resolved); 0 (the default) keeps them; otherwise at least 24h',
  }),
  auditRetention: field.duration({
    env: 'NOTIFY_AUDIT_RETENTION',
    flag: 'audit-retention',
    default: '8760h',
    doc: 'administrative audit entries older than this are removed (a year by default, the minimum most audit policies ask for); 0 keeps them; otherwise at least 24h',
  }),
  streamRetention: field.duration({
    env: 'NOTIFY_STREAM_RETENTION',
    flag: 'stream-retention',
    default: '168h',
    min: '1h',
    doc: 'how long the realtime stream keeps lifecycle, read and channel changes for streams that resume; a stream resuming from before that gets a reset event (reload)',
  }),
  loginAttemptsPerAccount: field.int({
    env: 'NOTIFY_LOGIN_ATTEMPTS_PER_ACCOUNT',
    flag: 'login-attempts-per-account',
    default: 10,
    min: 1,
    max: 1000,
    doc: 'sign-in attempts per user name and throttle window (then 429 until the window ends)',
  }),
  loginAttemptsPerAddress: field.int({
    env: 'NOTIFY_LOGIN_ATTEMPTS_PER_ADDRESS',
    flag: 'login-attempts-per-address',
    default: 30,
    min: 1,
    max: 10000,
    doc: 'sign-in attempts per client address (IPv6: per /64) and throttle window',
  }),
  loginThrottleWindow: field.duration({
    env: 'NOTIFY_LOGIN_THROTTLE_WINDOW',
    flag: 'login-throttle-window',
    default: '1m',
    min: '1s',
    max: '24h',
    doc: 'sign-in throttle window; a throttled account or address is free again when it ends',
  }),
  bcryptCost: field.int({
    env: 'NOTIFY_BCRYPT_COST',
    flag: 'bcrypt-cost',
    default: 12,
    min: 4,
    max: 15,
    doc: 'bcrypt work factor for local passwords (tests use 4)',
  }),
  bodyLimit: field.bytes({
    env: 'NOTIFY_BODY_LIMIT',
    flag: 'body-limit',
    default: '1MiB',
    min: 4096,
    max: 16 * 1024 * 1024,
    doc: 'largest accepted request body',
  }),
  oauthIssuer: field.url({
    env: 'NOTIFY_OAUTH_ISSUER',
    flag: 'oauth-issuer',
    protocols: ['http:', 'https:'],
    doc: 'OpenID provider issuer URL; with NOTIFY_OIDC_CLIENT_ID turns identity-provider sign-in on',
  }),
  oidcClientId: field.string({
    env: 'NOTIFY_OIDC_CLIENT_ID',
    flag: 'oidc-client-id',
    doc: 'client id of notify at the OpenID provider (a public client: PKCE, no secret)',
  }),
  actionKey: field.string({
    env: 'NOTIFY_ACTION_KEY',
    secret: true,
    doc: 'bootstrap action encryption key (32 bytes as base64, base64url or 64 hex digits); committed to the cluster setting action_encryption_key on first use',
  }),
  actionTimeout: field.duration({
    env: 'NOTIFY_ACTION_TIMEOUT',
    flag: 'action-timeout',
    default: '10s',
    min: '100ms',
    max: '60s',
    doc: 'whole-call deadline of an action callback (connect, send, response)',
  }),
  actionResponseLimit: field.bytes({
    env: 'NOTIFY_ACTION_RESPONSE_LIMIT',
    flag: 'action-response-limit',
    default: '64KiB',
    min: 1024,
    max: 1024 * 1024,
    doc: 'largest action callback response read; a larger one is a failure',
  }),
  pushContact: field.url({
    env: 'NOTIFY_PUSH_CONTACT',
    flag: 'push-contact',
    protocols: ['mailto:', 'https:'],
    doc: 'contact push services see in the VAPID signature (mailto: or https URL); default: the public URL when it is https',
  }),
  pushTtl: field.duration({
    env: 'NOTIFY_PUSH_TTL',
    flag: 'push-ttl',
    default: '24h',
    min: '1m',
    max: '672h',
    doc: 'how long a push service keeps a push for a device that is offline',
  }),
  pushBurst: field.int({
    env: 'NOTIFY_PUSH_BURST',
    flag: 'push-burst',
    default: 10,
    min: 0,
    max: 10_000,
    doc: 'pushes one browser gets at once; past them, one per NOTIFY_PUSH_INTERVAL, the rest told in a summary push (0: no limit)',
  }),
  pushInterval: field.duration({
    env: 'NOTIFY_PUSH_INTERVAL',
    flag: 'push-interval',
    default: '30s',
    min: '1s',
    max: '1h',
    doc: "after a browser's burst of pushes, the time between its next ones",
  }),
  pushAllowPrivateEndpoints: field.boolean({
    env: 'NOTIFY_PUSH_ALLOW_PRIVATE_ENDPOINTS',
    flag: 'push-allow-private-endpoints',
    default: false,
    doc: 'allow push endpoints on loopback, private and link-local addresses (a push service inside the network)',
  }),
  logLevel: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, {
    env: 'NOTIFY_LOG_LEVEL',
    flag: 'log-level',
    default: 'info',
  }),
} as const

export type RawConfig = ConfigOf<typeof schema>

export interface Config extends RawConfig {
  /** Reader authentication is on (a bootstrap password is set). */
  auth: boolean
  /** The public origin (`https://notify.example`), set whenever auth is on. */
  publicOrigin: string | undefined
  /** Identity-provider sign-in is on (issuer and client id set). */
  oidc: boolean
  /** VAPID subject: NOTIFY_PUSH_CONTACT, else an https public origin, else a placeholder mailto. */
  pushSubject: string
}

/** Where the values came from, so a rule names each setting the way it was given. */
export interface ConfigOrigin {
  sources: Record<string, Source>
  /** How each setting given was written (the loader's `labels`): `NOTIFY_READER_PASSWORD_FILE`. */
  labels?: Record<string, string>
  /** The config file read, if any. */
  file?: string
  /**
   * Settings given with a bad value, already reported by the loader (their value is undefined
   * here): a rule that reads one is skipped, a rule that asks whether it was given counts it.
   */
  invalid?: ReadonlySet<string>
}

/**
 * Cross-field rules on an already typed config; throws ConfigError listing every violation.
 * Each setting is named the way it was given: `readerUsername (in /path/config.json)`, `--listen`,
 * or its environment variable (also when it was not given: that is how to give it). A flag is
 * written `--listen` however it was typed, as the kit's loader writes it (packages/kit/src/config.ts),
 * so the loader's lines and these, reported together, name a flag one way.
 */
export function finishConfig(raw: RawConfig, origin: ConfigOrigin = { sources: {} }): Config {
  const problems: string[] = []
  const n = (key: keyof typeof schema): string => settingName(schema, origin, key)
  const invalid = origin.invalid ?? new Set<string>()
  const ok = (...keys: (keyof typeof schema)[]) => keys.every((k) => !invalid.has(k))
  const given = (key: keyof typeof schema) => raw[key] !== undefined || invalid.has(key)
  const auth = given('readerPassword')
  if (ok('retention') && raw.retention !== 0 && raw.retention < 86_400_000) {
    problems.push(`${n('retention')}: at least 24h, or 0 to keep notifications`)
  }
  if (ok('auditRetention') && raw.auditRetention !== 0 && raw.auditRetention < 86_400_000) {
    problems.push(`${n('auditRetention')}: at least 24h, or 0 to keep the audit log`)
  }
  if (ok('sessionMaxAge', 'sessionTtl') && raw.sessionMaxAge < raw.sessionTtl) {
    problems.push(`${n('sessionMaxAge')}: at least ${n('sessionTtl')} (equal to it: sessions are not renewed)`)
  }
  if (given('readerPassword') && !given('readerUsername')) {
    problems.push(`${n('readerUsername')}: required when ${n('readerPassword')} is set`)
  }
  if (given('readerUsername') && !given('readerPassword')) {
    problems.push(`${n('readerPassword')}: required when ${n('readerUsername')} is set`)
  }
  if (raw.readerUsername !== undefined && !USERNAME.test(raw.readerUsername)) {
    problems.push(`${n('readerUsername')}: must be lowercase letters, digits, ".", "_" or "-" (at most 64)`)
  }
  let publicOrigin: string | undefined
  if (raw.publicUrl !== undefined) {
    const u = new URL(raw.publicUrl)
    if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash || u.username || u.password) {
      problems.push(`${n('publicUrl')}: must be an origin only (scheme://host[:port]), without path or query`)
    }
    publicOrigin = u.origin
  }
  if (auth && !given('publicUrl')) {
    problems.push(`${n('publicUrl')}: required when reader authentication is on (${n('readerPassword')} is set)`)
  }
  if (ok('listen')) {
    try {
      const { host } = parseListenAddress(raw.listen)
      if (!auth && !isLoopbackHost(host)) {
        problems.push(
          `${n('listen')}: ${raw.listen} is not a loopback address; without ${n('readerPassword')} the service is unauthenticated and only listens on loopback`,
        )
      }
    } catch (err) {
      problems.push(`${n('listen')}: ${(err as Error).message}`)
    }
  }
  const oidc = given('oauthIssuer') || given('oidcClientId')
  if (oidc) {
    if (!given('oauthIssuer')) problems.push(`${n('oauthIssuer')}: required when ${n('oidcClientId')} is set`)
    if (!given('oidcClientId')) problems.push(`${n('oidcClientId')}: required when ${n('oauthIssuer')} is set`)
    if (!auth)
      problems.push(
        `${n('oauthIssuer')}: identity-provider sign-in needs reader authentication (${n('readerPassword')})`,
      )
    if (raw.oauthIssuer !== undefined) {
      const u = new URL(raw.oauthIssuer)
      if (u.protocol === 'http:' && !isLoopbackHost(u.hostname.replace(/^\[|\]$/g, ''))) {
        problems.push(`${n('oauthIssuer')}: must be https (plain http only for a loopback test provider)`)
      }
    }
  }
  if (problems.length > 0) throw new ConfigError(problems)
  const pushSubject = raw.pushContact ?? (publicOrigin?.startsWith('https:') ? publicOrigin : 'mailto:notify@invalid')
  return { ...raw, auth, publicOrigin, pushSubject, oidc: oidc && auth }
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || isLoopback(host)
}

/**
 * The service's settings: flags > environment > the JSON file (`--config FILE`, else
 * `$NOTIFY_CONFIG`, else `/etc/gatehouse/notify.json` when it exists) > defaults, with the
 * cross-field rules. Bad values and broken rules are reported together, so fixing one does not
 * reveal the next; `warnings` are the loader's (a secret every user may read).
 */
export function loadServiceConfig(options: AppConfigOptions): { config: Config; warnings: string[] } {
  return loadWithChecks(
    () => loadAppConfig('notify', schema, options),
    ({ config, sources, labels, file, warnings }, invalid) => ({
      config: finishConfig(config, { sources, labels, invalid, ...(file ? { file } : {}) }),
      warnings,
    }),
  )
}

/** `loadServiceConfig` from raw arguments (`--config FILE` or `-config` among them) and an environment. */
export function readConfig(argv: string[], env: Record<string, string | undefined>): Config {
  return loadServiceConfig({ argv, env }).config
}
