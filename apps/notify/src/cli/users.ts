/**
 * `notify user ...`: the user panel on the command line, on the database `serve` uses. Every
 * change goes through the same code as the web panel (users/panel.ts): the same refusals (no
 * change may leave the installation without an enabled human administrator, under the same
 * lock), the same audit entries (actor `cli:<login>`) and the same ending of sessions and
 * streams. Running servers see the change at their next request; their open streams close or
 * narrow at once on PostgreSQL (NOTIFY) and within the stream poll interval on SQLite.
 */
import { printList } from '@gatehouse/kit/cli/output.ts'
import { CliError, invokedAs, UsageError } from '@gatehouse/kit/cli/program.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { recordAudit } from '../audit/store.ts'
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/passwords.ts'
import type { UserRow } from '../db/schema.ts'
import { USERNAME } from '../name-patterns.ts'
import { changeUser, resetPassword, revokeSessions, type UserPatch } from '../users/panel.ts'
import { UserService, userResponse } from '../users/service.ts'
import { listUsers } from '../users/store.ts'
import { cliActor, readSecretFile } from './admin-actor.ts'
import { passwordSchema } from './admin-schema.ts'
import { adminConfig, readDatabase, withDatabase } from './database.ts'

type Opts = Record<string, unknown>
const out = (text: string) => void process.stdout.write(text)

export async function userListCommand(o: Opts): Promise<void> {
  const users = await readDatabase(o, (d) => listUsers(d.db))
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
      { header: 'LAST SIGN-IN', value: (u) => u.last_sign_in_at ?? 'never' },
    ],
    // Never the password hash or the identity provider's subject.
    {
      json: o.json === true,
      toJson: userResponse,
      empty: `no users yet: ${invokedAs('notify')} user create NAME --admin --password-file FILE`,
    },
  )
}

function checkUsername(name: string): void {
  if (!USERNAME.test(name))
    throw new UsageError(`${JSON.stringify(name)} is not a user name (a-z, 0-9, '.', '_', '-'; at most 64)`)
}

function password(o: Opts): string {
  const value = readSecretFile(o.passwordFile as string, 'password')
  if (value.length < MIN_PASSWORD_LENGTH || value.length > MAX_PASSWORD_LENGTH)
    throw new CliError(`the password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`)
  return value
}

const bcryptCost = (o: Opts) => adminConfig(o, passwordSchema).bcryptCost

function printUser(o: Opts, user: UserRow, what: string): void {
  if (o.json === true) out(`${terminalJson(userResponse(user), 2)}\n`)
  else out(`${what} ${escapeTerminal(user.username)}\n`)
}

export async function userCreateCommand(o: Opts, username: string): Promise<void> {
  checkUsername(username)
  const system = o.system === true
  if (system && o.passwordFile !== undefined)
    throw new UsageError('a system reader has no password: drop --password-file')
  if (!system && o.passwordFile === undefined)
    throw new UsageError('a human reader needs --password-file FILE (or --system for a script identity)')
  const secret = system ? undefined : password(o)
  const user = await withDatabase(o, async (d) => {
    const created = await new UserService(d.db, bcryptCost(o)).create({
      username,
      ...(secret === undefined ? {} : { password: secret }),
      admin: o.admin === true,
      kind: system ? 'system' : 'human',
    })
    await recordAudit(d.db, cliActor(), 'user.create', created.username, {
      admin: created.is_admin === 1,
      kind: created.kind,
    })
    return created
  })
  printUser(o, user, user.is_admin === 1 ? 'created administrator' : 'created reader')
}

const CHANGES: Record<string, { patch: UserPatch; done: string }> = {
  promote: { patch: { admin: true }, done: 'is an administrator:' },
  demote: { patch: { admin: false }, done: 'is no longer an administrator:' },
  enable: { patch: { enabled: true }, done: 'enabled:' },
  disable: { patch: { enabled: false }, done: 'disabled (sessions ended):' },
}

/** promote, demote, enable or disable one reader. */
export async function userChangeCommand(o: Opts, change: keyof typeof CHANGES, username: string): Promise<void> {
  const { patch, done } = CHANGES[change]!
  const user = await withDatabase(o, (d) => changeUser(d.db, d.kind, cliActor(), username, patch))
  printUser(o, user, done)
}

export async function userRevokeSessionsCommand(o: Opts, username: string): Promise<void> {
  const revoked = await withDatabase(o, (d) => revokeSessions(d.db, d.kind, cliActor(), username))
  if (o.json === true) out(`${terminalJson({ username, revoked })}\n`)
  else out(`${revoked} session${revoked === 1 ? '' : 's'} of ${escapeTerminal(username)} ended\n`)
}

export async function userResetPasswordCommand(o: Opts, username: string): Promise<void> {
  const secret = password(o)
  await withDatabase(o, (d) => resetPassword(d.db, d.kind, cliActor(), username, secret, bcryptCost(o)))
  out(`password of ${escapeTerminal(username)} reset; their sessions ended\n`)
}
