/**
 * `notify channel list|create`: channels on the command line. Creating one goes through the
 * same code as POST /api/v1/channels (channels/service.ts): the same field rules, the name
 * immutable afterwards, the channel's publishing hook whose URL is printed once, the same
 * audit entry (actor `cli:<login>`) and the same change on readers' realtime streams.
 */
import { printList } from '@gatehouse/kit/cli/output.ts'
import { invokedAs, UsageError } from '@gatehouse/kit/cli/program.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import type { NewChannel } from '../channels/service.ts'
import { channelResponse, listChannels } from '../channels/store.ts'
import { cliActor } from './admin-actor.ts'
import { readDatabase, withDatabase } from './database.ts'
import { checkChannelName, issuedText, publicOrigin, withHint } from './hooks.ts'

type Opts = Record<string, unknown>
const out = (text: string) => void process.stdout.write(text)

export async function channelListCommand(o: Opts): Promise<void> {
  const rows = await readDatabase(o, (d) => listChannels(d.db))
  printList(
    rows,
    [
      { header: 'NAME', value: (c) => c.name },
      { header: 'DISPLAY NAME', value: (c) => c.display_name },
      {
        header: 'VISIBILITY',
        value: (c) => c.visibility,
        style: (c) => (c.visibility === 'private' ? 'yellow' : undefined),
      },
      { header: 'CREATED', value: (c) => c.created_at },
      // Last: the longest and free text, so it does not push the other columns apart.
      { header: 'DESCRIPTION', value: (c) => c.description },
    ],
    {
      json: o.json === true,
      toJson: (c) => channelResponse(c),
      empty: `no channels yet: ${invokedAs('notify')} channel create NAME`,
    },
  )
}

const FLAGS: Record<keyof NewChannel, string> = {
  name: 'the name',
  display_name: '--display-name',
  description: '--description',
  accent_color: '--color',
  visibility: '--private',
}

export async function channelCreateCommand(o: Opts, name: string): Promise<void> {
  checkChannelName(name, 'the name')
  const input: NewChannel = {
    name,
    display_name: o.displayName as string | undefined,
    description: o.description as string | undefined,
    accent_color: o.color as string | undefined,
    visibility: o.private === true ? 'private' : 'public',
  }
  const { createChannel, newChannelProblem } = await import('../channels/service.ts')
  const problem = newChannelProblem(input)
  if (problem) throw new UsageError(`${FLAGS[problem.field]} must be ${problem.why}`)
  const origin = publicOrigin(o)
  const { channel, hook } = await withDatabase(o, (d) => createChannel(d.db, d.kind, cliActor(), input)).catch(withHint)
  const url = origin === undefined ? null : `${origin}${hook.path}`
  if (o.json === true)
    out(
      `${terminalJson(
        {
          channel: channelResponse(channel),
          publishing: { webhook_id: hook.id, token: hook.token, path: hook.path, url },
        },
        2,
      )}\n`,
    )
  else {
    out(`channel ${escapeTerminal(channel.name)} created (${channel.visibility})\n`)
    out(`its publishing hook ${hook.id} (locked to the channel): `)
    out(issuedText(url, hook.path))
  }
}
