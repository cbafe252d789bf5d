/**
 * `artsvc publish`: the settings from flags and the environment (the token from ARTSVC_TOKEN,
 * else the one `artsvc login` kept for the URL's origin), then the upload; prints the URL.
 * A wrong or missing setting is a usage error (exit 2), a refusal or unreadable bundle exit 1.
 */
import { CliError, UsageError } from '@gatehouse/kit/cli/program.ts'
import { ConfigError } from '@gatehouse/kit/config.ts'
import { escapeTerminal } from '@gatehouse/kit/terminal.ts'
import { isLoopbackUrl, loadPublishConfig, type PublishConfig, stderrIsTerminal } from '../config.ts'
import { usableToken } from './credentials.ts'
import { PublishError, PublishUsageError, publish } from './publish.ts'

export async function publishCommand(flags: Record<string, unknown>, env = process.env): Promise<void> {
  let config: PublishConfig
  try {
    config = loadPublishConfig(flags, await withStoredToken(flags, env))
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.lines.join('; '))
    throw err
  }
  try {
    process.stdout.write(`${await publish(config, process.stderr, stderrIsTerminal())}\n`)
  } catch (err) {
    // The message may quote the server's refusal (bundle entry names): escaped.
    if (err instanceof PublishError) throw new CliError(escapeTerminal(err.message))
    if (err instanceof PublishUsageError) throw new UsageError(err.message)
    throw err
  }
}

/** The environment with ARTSVC_TOKEN set from `artsvc login`'s file when none is given. */
async function withStoredToken(flags: Record<string, unknown>, env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  if (env.ARTSVC_TOKEN || env.ARTSVC_TOKEN_FILE) return env
  const url = (flags.url as string | undefined) ?? env.ARTSVC_URL
  let origin: string
  try {
    const u = new URL(url ?? '')
    // Plain http off loopback is refused by the loader: say that, not "not logged in".
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopbackUrl(u))) return env
    origin = u.origin
  } catch {
    return env // no URL or not one: the loader says so
  }
  const token = await usableToken(origin, env)
  // The same words as the management commands: a missing login is a failure (exit 1), not a usage error.
  if (!token) throw new CliError(`not logged in to ${origin}: run artsvc login or set ARTSVC_TOKEN`)
  return { ...env, ARTSVC_TOKEN: token }
}
