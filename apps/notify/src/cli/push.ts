/**
 * `notify push keys|list`: the Web Push VAPID public key every process signs with (generated
 * by the first server start, kept as the cluster setting `vapid_keys`) and the readers'
 * subscriptions. The private key, the subscriptions' encryption keys and the endpoint URLs
 * (capabilities: whoever holds one can push to that browser) are never printed; an endpoint
 * is shown by its push service's origin.
 */
import { printList } from '@gatehouse/kit/cli/output.ts'
import { CliError } from '@gatehouse/kit/cli/program.ts'
import { terminalJson } from '@gatehouse/kit/terminal.ts'
import { VAPID_SETTING } from '../settings/cluster.ts'
import { findUserByName } from '../users/store.ts'
import { readDatabase } from './database.ts'

type Opts = Record<string, unknown>

export async function pushKeysCommand(o: Opts): Promise<void> {
  const { value, subscriptions } = await readDatabase(o, async (d) => {
    const row = await d.db
      .selectFrom('settings')
      .select(['value', 'created_at'])
      .where('name', '=', VAPID_SETTING)
      .executeTakeFirst()
    const count = await d.db
      .selectFrom('push_subscriptions')
      .select((eb) => eb.fn.countAll().as('c'))
      .executeTakeFirstOrThrow()
    return { value: row, subscriptions: Number(count.c) }
  })
  if (!value) throw new CliError('no VAPID key pair yet: the first notify serve on this database generates it')
  const publicKey = (JSON.parse(value.value) as { publicKey: string }).publicKey
  if (o.json === true)
    process.stdout.write(`${terminalJson({ public_key: publicKey, created_at: value.created_at, subscriptions }, 2)}\n`)
  else
    process.stdout.write(
      `VAPID public key (applicationServerKey): ${publicKey}\ncreated ${value.created_at}; ${subscriptions} subscription${subscriptions === 1 ? '' : 's'}\n`,
    )
}

function origin(endpoint: string): string {
  try {
    return new URL(endpoint).origin
  } catch {
    return '(invalid)'
  }
}

export async function pushListCommand(o: Opts): Promise<void> {
  const rows = await readDatabase(o, async (d) => {
    let q = d.db
      .selectFrom('push_subscriptions as s')
      .innerJoin('users as u', 'u.id', 's.user_id')
      .select(['s.id', 'u.username', 's.label', 's.endpoint', 's.created_at', 's.last_success_at', 's.last_failure'])
      .orderBy('u.username')
      .orderBy('s.created_at')
    if (typeof o.user === 'string') {
      const user = await findUserByName(d.db, o.user)
      if (!user) throw new CliError(`no user ${JSON.stringify(o.user)}`)
      q = q.where('s.user_id', '=', user.id)
    }
    return q.execute()
  })
  printList(
    rows,
    [
      { header: 'ID', value: (s) => s.id },
      { header: 'USER', value: (s) => s.username },
      { header: 'LABEL', value: (s) => s.label },
      { header: 'PUSH SERVICE', value: (s) => origin(s.endpoint) },
      { header: 'CREATED', value: (s) => s.created_at },
      { header: 'LAST DELIVERED', value: (s) => s.last_success_at ?? 'never' },
      { header: 'LAST FAILURE', value: (s) => s.last_failure ?? '' },
    ],
    {
      json: o.json === true,
      toJson: ({ endpoint, ...s }) => ({ ...s, push_service: origin(endpoint) }),
      empty: `no push subscriptions${typeof o.user === 'string' ? ` for ${o.user}` : ''}: a reader turns push on in the web app (Push notifications)`,
    },
  )
}
