/**
 * `notify target list|set|delete`: action targets on the command line, through the same code
 * as `PUT`/`DELETE /api/v1/action-targets/{name}` (actions/targets.ts): the same URL rules,
 * the credential sealed with the committed action key (the first save commits
 * NOTIFY_ACTION_KEY, as the API does), the same audit entries (actor `cli:<login>`). A
 * credential is read from a file, never from the command line, and never printed.
 */
import { printList } from '@gatehouse/kit/cli/output.ts'
import { CliError, invokedAs } from '@gatehouse/kit/cli/program.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { listTargets, TARGET_NAME, targetResponse } from '../actions/target-rows.ts'
import { cliActor, readSecretFile } from './admin-actor.ts'
import { targetSchema } from './admin-schema.ts'
import { adminConfig, readDatabase, withDatabase } from './database.ts'

type Opts = Record<string, unknown>
const out = (text: string) => void process.stdout.write(text)

export async function targetListCommand(o: Opts): Promise<void> {
  const rows = await readDatabase(o, (d) => listTargets(d.db))
  printList(
    rows,
    [
      { header: 'NAME', value: (t) => t.name },
      { header: 'KIND', value: (t) => (t.kind === 'slash' ? `slash /${t.slash_trigger}` : 'target') },
      { header: 'URL', value: (t) => t.url },
      { header: 'PRIVATE', value: (t) => (t.allow_private === 1 ? 'allowed' : 'no') },
      { header: 'CREDENTIAL', value: (t) => (t.credential === null ? 'none' : 'set') },
      { header: 'UPDATED', value: (t) => t.updated_at },
    ],
    {
      json: o.json === true,
      toJson: targetResponse,
      empty: `no action targets yet: ${invokedAs('notify')} target set NAME --url URL`,
    },
  )
}

export async function targetSetCommand(o: Opts, name: string): Promise<void> {
  if (!TARGET_NAME.test(name))
    throw new CliError(`${JSON.stringify(name)} is not a target name (a-z, 0-9, '_', '-'; at most 64)`)
  if (o.credentialFile !== undefined && o.credential === false)
    throw new CliError('give --credential-file or --no-credential, not both')
  const credential =
    o.credential === false
      ? null
      : o.credentialFile !== undefined
        ? readSecretFile(o.credentialFile as string, 'credential')
        : undefined
  const { actionKey } = adminConfig(o, targetSchema)
  const { saveTarget } = await import('../actions/targets.ts')
  const { ActionKeys } = await import('../settings/action-key.ts')
  const { target, created } = await withDatabase(o, (d) =>
    saveTarget(d.db, new ActionKeys(d.db, actionKey), cliActor(), name, {
      url: o.url as string,
      allow_private: o.allowPrivate === true,
      ...(credential === undefined ? {} : { credential }),
      ...(typeof o.description === 'string' ? { description: o.description } : {}),
    }),
  )
  if (o.json === true) out(`${terminalJson(targetResponse(target), 2)}\n`)
  else
    out(
      `target ${escapeTerminal(name)} ${created ? 'created' : 'updated'}: ${escapeTerminal(target.url)}` +
        `${target.credential === null ? '' : ' (with a bearer credential)'}\n`,
    )
}

export async function targetDeleteCommand(o: Opts, name: string): Promise<void> {
  const { deleteTarget } = await import('../actions/targets.ts')
  await withDatabase(o, (d) => deleteTarget(d.db, cliActor(), name))
  out(`target ${escapeTerminal(name)} deleted: its buttons fail from now on, on every node\n`)
}
