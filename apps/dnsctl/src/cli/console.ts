/**
 * `dnsctl console`: ask the running API (loopback: whoever can reach it may manage DNS anyway)
 * for a one-time sign-in link to the web console, and print it.
 */
import { UsageError } from '@gatehouse/kit/cli/program.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { apiOf } from './client.ts'

export async function consoleLink(o: Record<string, unknown>): Promise<void> {
  const name = (o.name as string | undefined) ?? process.env.USER ?? 'operator'
  if (!/^[\x21-\x7e][\x20-\x7e]{0,99}$/.test(name)) {
    throw new UsageError('--name must be 1 to 100 printable ASCII characters')
  }
  const api = apiOf(o)
  const { body } = await api.json<{ url: string; name: string; expires_at: string }>('POST', '/console/links', {
    body: { name },
  })
  if (o.json === true) {
    process.stdout.write(`${terminalJson(body)}\n`)
    return
  }
  process.stdout.write(
    `Open this link to sign in to the web console as ${escapeTerminal(body.name)} (once, until ${body.expires_at}):\n${escapeTerminal(body.url)}\n`,
  )
}
