/** `notify user list`: the readers, for an operator who needs a name for `notify token create --user`. */
import { printList } from '@gatehouse/kit/cli/output.ts'
import { listUsers } from '../users/store.ts'
import { withDatabase } from './database.ts'

export async function userListCommand(o: Record<string, unknown>): Promise<void> {
  const users = await withDatabase(o, (d) => listUsers(d.db))
  printList(
    users,
    [
      { header: 'USER', value: (u) => u.username },
      { header: 'KIND', value: (u) => u.kind },
      { header: 'SIGN-IN', value: (u) => u.auth_type },
      { header: 'ROLE', value: (u) => (u.is_admin === 1 ? 'administrator' : 'reader') },
      {
        header: 'STATE',
        value: (u) => (u.enabled === 1 ? 'enabled' : 'disabled'),
        style: (u) => (u.enabled === 1 ? 'green' : 'red'),
      },
      { header: 'CREATED', value: (u) => u.created_at },
    ],
    {
      json: o.json === true,
      // Never the password hash or the identity provider's subject.
      toJson: (u) => ({
        id: u.id,
        username: u.username,
        kind: u.kind,
        auth_type: u.auth_type,
        admin: u.is_admin === 1,
        enabled: u.enabled === 1,
        created_at: u.created_at,
      }),
    },
  )
}
