/**
 * The administration CLI: `edgegate node|admin|decision ...`, working on the database
 * directly (the same one `serve` uses). Flags go before positional arguments.
 */
import { userInfo } from 'node:os'
import {
  ConfigError,
  describeSchema,
  escapeTerminal,
  field,
  type Schema,
  terminalJson,
  type Verdict,
} from '@gatehouse/kit'
import { audit, insertAdmin, listAdmins, removeAdmin } from '../admins/store.ts'
import { newToken } from '../auth/tokens.ts'
import { cliSchema, loadCommandConfig } from '../config.ts'
import { openEdgeDatabase } from '../db/open.ts'
import { changeDecision, removeDecision } from '../decisions/service.ts'
import {
  addNode,
  type Credential,
  describeNode,
  RegistryError,
  rotateNodeToken,
  setNodeActive,
} from '../nodes/service.ts'
import { listNodes } from '../nodes/store.ts'
import { formatMillis } from '../timestamps.ts'

/** Wrong command line: printed with the usage, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

interface Command {
  usage: string
  schema: Schema
  args: number
  run(config: Record<string, unknown>, args: string[], out: (line: string) => void): Promise<void>
}

const actor = () => `cli:${userInfo().username}`

const withDb = async <T>(
  config: Record<string, unknown>,
  fn: (db: Awaited<ReturnType<typeof openEdgeDatabase>>) => Promise<T>,
) => {
  const database = await openEdgeDatabase(config.database as string, 2)
  try {
    return await fn(database)
  } finally {
    await database.close()
  }
}

const nodeCommands: Record<string, Command> = {
  add: {
    usage:
      'edgegate node add --kind sshgate|tlsgate|websignal|log_watcher [--cert-name NAME | --cert-fingerprint SHA256] INSTANCE_ID',
    schema: {
      ...cliSchema,
      kind: field.string({ flag: 'kind', required: true, doc: 'sshgate, tlsgate, websignal or log_watcher' }),
      cert_name: field.string({
        flag: 'cert-name',
        doc: 'authenticate with a client certificate whose CN or DNS SAN is this',
      }),
      cert_fingerprint: field.string({
        flag: 'cert-fingerprint',
        doc: 'authenticate with the client certificate of this SHA-256 (hex)',
      }),
    },
    args: 1,
    async run(c, [id], out) {
      if (c.cert_name !== undefined && c.cert_fingerprint !== undefined) {
        throw new UsageError('give --cert-name or --cert-fingerprint, not both (a node has exactly one credential)')
      }
      const credential: Credential =
        c.cert_name !== undefined
          ? { type: 'cert_name', name: c.cert_name as string }
          : c.cert_fingerprint !== undefined
            ? { type: 'cert_fingerprint', sha256: (c.cert_fingerprint as string).replaceAll(':', '').toLowerCase() }
            : { type: 'token' }
      const token = await withDb(c, (d) => addNode(d.db, id!, c.kind as string, credential, actor()))
      out(`node ${id} added (${c.kind})`)
      if (token) out(`token: ${token}`)
      if (token) out('Store it now: it is shown only once.')
    },
  },
  list: {
    usage: 'edgegate node list [--json]',
    schema: { ...cliSchema, json: field.boolean({ flag: 'json', default: false, doc: 'print JSON' }) },
    args: 0,
    async run(c, _args, out) {
      const nodes = (await withDb(c, (d) => listNodes(d.db))).map(describeNode)
      if (c.json) return out(terminalJson(nodes, 2))
      for (const n of nodes) {
        out(
          `${n.instance_id}\t${n.kind}\t${n.active ? 'active' : 'disabled'}\t${n.auth}\tlast seen ${n.last_seen_at ?? 'never'}`,
        )
      }
    },
  },
  disable: {
    usage: 'edgegate node disable INSTANCE_ID',
    schema: cliSchema,
    args: 1,
    async run(c, [id], out) {
      await withDb(c, (d) => setNodeActive(d.db, id!, false, actor()))
      out(`node ${id} disabled`)
    },
  },
  enable: {
    usage: 'edgegate node enable INSTANCE_ID',
    schema: cliSchema,
    args: 1,
    async run(c, [id], out) {
      await withDb(c, (d) => setNodeActive(d.db, id!, true, actor()))
      out(`node ${id} enabled`)
    },
  },
  'rotate-token': {
    usage: 'edgegate node rotate-token INSTANCE_ID',
    schema: cliSchema,
    args: 1,
    async run(c, [id], out) {
      const token = await withDb(c, (d) => rotateNodeToken(d.db, id!, actor()))
      out(`token: ${token}`)
      out('The previous token no longer works. Store this one now: it is shown only once.')
    },
  },
}

const adminCommands: Record<string, Command> = {
  add: {
    usage: 'edgegate admin add NAME',
    schema: cliSchema,
    args: 1,
    async run(c, [name], out) {
      if (!/^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/.test(name!))
        throw new RegistryError('an administrator name is letters, digits, ".", "_", "@" or "-"')
      const token = newToken('admin')
      await withDb(c, async (d) => {
        if ((await listAdmins(d.db)).some((a) => a.name === name))
          throw new RegistryError(`administrator ${name} already exists`)
        await insertAdmin(d.db, name!, token.hash, Date.now())
        await audit(d.db, actor(), 'admin.add', name!)
      })
      out(`administrator ${name} added`)
      out(`token: ${token.token}`)
      out('Store it now: it is shown only once.')
    },
  },
  list: {
    usage: 'edgegate admin list',
    schema: cliSchema,
    args: 0,
    async run(c, _args, out) {
      for (const a of await withDb(c, (d) => listAdmins(d.db)))
        out(`${a.name}\tcreated ${formatMillis(Number(a.created_ms))}`)
    },
  },
  remove: {
    usage: 'edgegate admin remove NAME',
    schema: cliSchema,
    args: 1,
    async run(c, [name], out) {
      await withDb(c, async (d) => {
        if (!(await removeAdmin(d.db, name!))) throw new RegistryError(`no administrator ${name}`)
        await audit(d.db, actor(), 'admin.remove', name!)
      })
      out(`administrator ${name} removed (its token and sessions no longer work)`)
    },
  },
}

const instanceFlag = {
  instance: field.string({ flag: 'instance', required: true, doc: 'the gate instance_id (decision scope)' }),
}

function verdictCommand(status: Verdict): Command {
  return {
    usage: `edgegate decision ${status === 'approved' ? 'approve' : status === 'blocked' ? 'block' : 'pending'} --instance ID${status === 'approved' ? ' [--label TEXT]' : ''} FINGERPRINT`,
    schema: {
      ...cliSchema,
      ...instanceFlag,
      ...(status === 'approved'
        ? { label: field.string({ flag: 'label', doc: 'label stored with the approval' }) }
        : {}),
    },
    args: 1,
    async run(c, [fp], out) {
      const d = await withDb(c, (x) =>
        changeDecision(x.db, x.kind, {
          instanceId: c.instance as string,
          fingerprint: fp!,
          status,
          ...(c.label !== undefined ? { label: c.label as string } : {}),
          actor: actor(),
        }),
      )
      out(
        `${d.scope_id} ${d.fingerprint} ${d.status}${d.label ? ` (${escapeTerminal(d.label)})` : ''} at ${d.updated_at}`,
      )
    },
  }
}

const decisionCommands: Record<string, Command> = {
  approve: verdictCommand('approved'),
  block: verdictCommand('blocked'),
  pending: verdictCommand('pending'),
  label: {
    usage: 'edgegate decision label --instance ID FINGERPRINT LABEL',
    schema: { ...cliSchema, ...instanceFlag },
    args: 2,
    async run(c, [fp, label], out) {
      const d = await withDb(c, (x) =>
        changeDecision(x.db, x.kind, {
          instanceId: c.instance as string,
          fingerprint: fp!,
          label: label!,
          actor: actor(),
        }),
      )
      out(`${d.scope_id} ${d.fingerprint} labelled ${terminalJson(d.label)}`)
    },
  },
  delete: {
    usage: 'edgegate decision delete --instance ID FINGERPRINT',
    schema: { ...cliSchema, ...instanceFlag },
    args: 1,
    async run(c, [fp], out) {
      await withDb(c, (x) => removeDecision(x.db, x.kind, c.instance as string, fp!, actor()))
      out(`${c.instance} ${fp} decision deleted`)
    },
  },
}

export const GROUPS: Record<string, Record<string, Command>> = {
  node: nodeCommands,
  admin: adminCommands,
  decision: decisionCommands,
}

export function groupUsage(group: string): string {
  return Object.values(GROUPS[group]!)
    .map((c) => `  ${c.usage}`)
    .join('\n')
}

/** Run `edgegate <group> <sub> ...`; throws UsageError, ConfigError or a domain error. */
export async function runCommand(group: string, argv: string[], out: (line: string) => void): Promise<void> {
  const [sub, ...rest] = argv
  const commands = GROUPS[group]!
  if (sub === undefined || sub === '--help' || sub === '-h') {
    out(`usage:\n${groupUsage(group)}`)
    if (sub === undefined) throw new UsageError(`edgegate ${group}: a subcommand is required`)
    return
  }
  const command = commands[sub]
  if (!command)
    throw new UsageError(`edgegate ${group}: unknown subcommand ${JSON.stringify(sub)}\nusage:\n${groupUsage(group)}`)
  if (rest.includes('--help') || rest.includes('-h')) {
    out(`usage: ${command.usage}\n\nflags:\n${describeSchema(command.schema).join('\n')}`)
    return
  }
  let loaded: ReturnType<typeof loadCommandConfig>
  try {
    loaded = loadCommandConfig(command.schema, rest)
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(`${err.lines.join('\n')}\nusage: ${command.usage}`)
    throw err
  }
  if (loaded.positionals.length !== command.args) {
    throw new UsageError(
      `expected ${command.args} argument(s), got ${loaded.positionals.length}\nusage: ${command.usage}`,
    )
  }
  await command.run(loaded.config as Record<string, unknown>, loaded.positionals, out)
}
