/**
 * `edgegate alert test`: send one alert to `--alert-url` now, the way `serve` sends them, and
 * say whether the channel took it. A wrong token or path otherwise shows only on the day a gate
 * goes dark. The URL's path holds the hook token: only its origin is printed.
 */
import { hostname } from 'node:os'
import { loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { CliError, UsageError } from '@gatehouse/kit/cli/program.ts'
import { HttpClientError } from '@gatehouse/kit/http-client.ts'
import { postAlert } from '../alerts.ts'
import { alertSchema, alertUrlProblem } from '../config.ts'
import { formatMillis } from '../timestamps.ts'

export async function alertTest(flags: Record<string, unknown>, configFile: string | undefined): Promise<void> {
  const url = loadAppConfig('edgegate', alertSchema, { flags, config: configFile, partial: true }).config.alert_url
  if (url === undefined) {
    throw new UsageError(
      'give --alert-url (or EDGEGATE_ALERT_URL, or alert_url in the config file): where serve sends alerts',
    )
  }
  const problem = alertUrlProblem(url)
  if (problem) throw new UsageError(problem)
  const origin = new URL(url).origin
  try {
    await postAlert(url, {
      title: 'test alert',
      message: `A test from "edgegate alert test" on ${hostname()} at ${formatMillis(Date.now())}: edgegate's alerts (silent nodes, expiring certificates, a database behind its gates) reach this channel.`,
      priority: 'default',
      tags: ['test'],
    })
  } catch (err) {
    const status = err instanceof HttpClientError ? err.statusCode : undefined
    if (status !== undefined && status >= 400 && status < 500) {
      throw new CliError(
        `the channel at ${origin} refused the alert (HTTP ${status}): check the token and path of --alert-url`,
      )
    }
    throw new CliError(
      status === undefined
        ? `the alert did not reach the channel: ${(err as Error).message}`
        : `the channel at ${origin} answered HTTP ${status}: it is there but failing (serve would retry)`,
    )
  }
  process.stdout.write(`test alert delivered to ${origin}\n`)
}
