/**
 * Which JSON config file a program reads: `--config FILE`, else `$<APP>_CONFIG`, else
 * `/etc/gatehouse/<app>.json` when it exists. A file the operator named must exist; the
 * default location is optional.
 */
import { type ConfigOf, type Loaded, loadConfig, type Schema } from '../config.ts'
import { existsSync } from '../startup-builtins.ts'

export const CONFIG_DIR = '/etc/gatehouse'

export interface ConfigFile {
  path: string
  /** Named by the operator (flag or environment), so it must exist. */
  required: boolean
}

/** The environment variable naming an app's config file: `EDGEGATE_CONFIG` for `edgegate`. */
export function configEnvName(app: string): string {
  return `${app.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_CONFIG`
}

/**
 * @example configFileFor('edgegate', undefined, process.env) // { path: '/etc/gatehouse/edgegate.json', required: false } when it exists
 */
export function configFileFor(
  app: string,
  explicit: string | undefined,
  env: Record<string, string | undefined> = process.env,
  exists: (path: string) => boolean = existsSync,
): ConfigFile | undefined {
  if (explicit !== undefined && explicit !== '') return { path: explicit, required: true }
  const fromEnv = env[configEnvName(app)]
  if (fromEnv !== undefined && fromEnv !== '') return { path: fromEnv, required: true }
  const path = `${CONFIG_DIR}/${app}.json`
  return exists(path) ? { path, required: false } : undefined
}

export interface AppConfigOptions {
  /** Flags already parsed by commander, keyed by flag name (`database`, `log-level`). */
  flags?: Record<string, unknown>
  /** Or raw arguments for the kit's own flag parser; `--config FILE` among them names the file. */
  argv?: string[]
  /** The `--config` value, if given. */
  config?: string | undefined
  env?: Record<string, string | undefined>
  /** The schema covers part of the program's file (an admin command): ignore its other keys. */
  partial?: boolean
}

/**
 * Load an app's configuration: flags > environment > config file (chosen by `configFileFor`) >
 * defaults. Throws `ConfigError` listing every problem.
 *
 * @example loadAppConfig('edgegate', cliSchema, { flags: { database: opts.database }, config: opts.config })
 */
export function loadAppConfig<S extends Schema>(app: string, schema: S, options: AppConfigOptions = {}): Loaded<S> {
  const env = options.env ?? process.env
  const { argv, config } = options.argv ? takeConfigFlag(options.argv) : { argv: undefined, config: undefined }
  const file = configFileFor(app, options.config ?? config, env)
  return loadConfig(schema, {
    env,
    ...(argv ? { argv } : {}),
    ...(options.flags ? { flags: options.flags } : {}),
    ...(file ? { file: file.path, fileRequired: file.required } : {}),
    ...(options.partial ? { ignoreUnknownFileKeys: true } : {}),
  })
}

/** Split `--config FILE` (`--config=FILE`, `-config FILE`) out of raw arguments, before `--`. */
export function takeConfigFlag(argv: string[]): { argv: string[]; config: string | undefined } {
  let config: string | undefined
  const rest: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--') {
      rest.push(...argv.slice(i))
      break
    }
    if (a === '--config' || a === '-config') config = argv[++i] ?? ''
    else if (a.startsWith('--config=')) config = a.slice('--config='.length)
    else rest.push(a)
  }
  return { argv: rest, config }
}

export type { ConfigOf }
