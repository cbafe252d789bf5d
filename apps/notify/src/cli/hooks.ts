/**
 * `notify hook list|create|new-url|revoke`: incoming webhooks on the command line, through the
 * same code as POST /api/v1/webhooks, …/{id}/new-url and …/{id}/revoke (webhooks/service.ts):
 * the channel must exist, the same audit entries (actor `cli:<login>`). A hook's token is
 * printed once, when it is issued, and never listed.
 */
import { printList } from '@gatehouse/kit/cli/output.ts'
import { CliError, invokedAs, UsageError } from '@gatehouse/kit/cli/program.ts'
import { AppError } from '@gatehouse/kit/errors.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { findChannel } from '../channels/store.ts'
import { errors } from '../errors.ts'
import { CHANNEL_NAME } from '../name-patterns.ts'
import { listWebhooks, metadata } from '../webhooks/store.ts'
import { cliActor } from './admin-actor.ts'
import { hookSchema } from './admin-schema.ts'
import { adminConfig, readDatabase, withDatabase } from './database.ts'

type Opts = Record<string, unknown>
const out = (text: string) => void process.stdout.write(text)

export function checkChannelName(name: string, what: string): void {
  if (!CHANNEL_NAME.test(name))
    throw new UsageError(
      `${what} ${JSON.stringify(name)} is not a channel name (1 to 63 of a-z, 0-9, '_', '-', starting with a letter or digit)`,
    )
}

/** A not-found refusal of the service, with the command that lists what exists (runCli spells it as typed). */
export function withHint(err: unknown): never {
  if (err instanceof AppError && err.code === 'channel_not_found')
    throw new CliError(`${err.message} (notify channel list shows the channels)`)
  if (err instanceof AppError && err.code === 'webhook_not_found')
    throw new CliError(`${err.message} (notify hook list shows the hooks)`)
  throw err
}

/**
 * Where hook URLs start, as the web client builds them (the browser origin, then the path):
 * the configured public URL's origin; undefined without one, when only the path is known.
 * Read before anything is written, so a bad setting cannot cost a token shown only once.
 */
export function publicOrigin(o: Opts): string | undefined {
  const { publicUrl } = adminConfig(o, hookSchema)
  return publicUrl === undefined ? undefined : new URL(publicUrl).origin
}

/** The lines that hand over a new hook's secret URL, shown only this once. */
export function issuedText(url: string | null, path: string): string {
  const where = url ?? `${path} (after the server's address: no public URL is configured, see NOTIFY_PUBLIC_URL)`
  return (
    `${where}\n` +
    'Store it now: it is shown only once. POST to it, or send its token as "Authorization: Bearer <token>" to /api/v1/notifications.\n'
  )
}

export async function hookListCommand(o: Opts): Promise<void> {
  const channel = o.channel as string | undefined
  if (channel !== undefined) checkChannelName(channel, '--channel')
  const rows = await readDatabase(o, async (d) => {
    if (channel !== undefined && !(await findChannel(d.db, channel))) withHint(errors.channel_not_found(channel))
    return listWebhooks(d.db, channel)
  })
  printList(
    rows.map(metadata),
    [
      { header: 'ID', value: (w) => w.id },
      { header: 'CHANNEL', value: (w) => w.channel },
      { header: 'LOCKED', value: (w) => (w.channel_locked ? 'yes' : 'no') },
      { header: 'KIND', value: (w) => w.kind },
      { header: 'CREATED', value: (w) => w.created_at },
      {
        header: 'STATE',
        value: (w) => (w.active ? 'active' : `revoked ${w.revoked_at}`),
        style: (w) => (w.active ? 'green' : 'red'),
      },
    ],
    {
      json: o.json === true,
      empty: `no hooks${channel === undefined ? '' : ` on ${channel}`} yet: ${invokedAs('notify')} hook create --channel ${channel ?? 'CHANNEL'}`,
    },
  )
}

export async function hookCreateCommand(o: Opts): Promise<void> {
  const channel = o.channel as string
  checkChannelName(channel, '--channel')
  const locked = o.lockChannel === true
  const origin = publicOrigin(o)
  const { createWebhook } = await import('../webhooks/service.ts')
  const hook = await withDatabase(o, (d) => createWebhook(d.db, cliActor(), channel, locked)).catch(withHint)
  const url = origin === undefined ? null : `${origin}${hook.path}`
  if (o.json === true) out(`${terminalJson({ ...hook, url }, 2)}\n`)
  else {
    const policy = locked ? 'locked to it' : 'a payload may name another public channel'
    out(`hook ${hook.id} created on channel ${escapeTerminal(channel)} (${policy}): `)
    out(issuedText(url, hook.path))
  }
}

/** Another URL for a hook, as a rotation's first step: hand it out, then revoke the old id. */
export async function hookNewUrlCommand(o: Opts, id: string): Promise<void> {
  const origin = publicOrigin(o)
  const { newUrl } = await import('../webhooks/service.ts')
  const hook = await withDatabase(o, (d) => newUrl(d.db, cliActor(), id)).catch(withHint)
  const url = origin === undefined ? null : `${origin}${hook.path}`
  if (o.json === true) out(`${terminalJson({ ...hook, url }, 2)}\n`)
  else {
    out(`hook ${hook.id} issued for channel ${escapeTerminal(hook.channel)} beside ${escapeTerminal(id)}, `)
    out(`which works until revoked (notify hook revoke ${escapeTerminal(id)}): `)
    out(issuedText(url, hook.path))
  }
}

export async function hookRevokeCommand(o: Opts, id: string): Promise<void> {
  const { revoke } = await import('../webhooks/service.ts')
  const { hook, changed } = await withDatabase(o, (d) => revoke(d.db, cliActor(), id)).catch(withHint)
  if (o.json === true) out(`${terminalJson({ ...metadata(hook), changed }, 2)}\n`)
  else if (changed)
    out(`hook ${escapeTerminal(id)} revoked: deliveries to its URL are refused from now on (what it delivered stays)\n`)
  else out(`hook ${escapeTerminal(id)} was already revoked (at ${hook.revoked_at}); nothing changed\n`)
}
