/**
 * The notify command tree on the kit's app shell. `serve` is the default command, so the spec's
 * form `notify -listen 127.0.0.1:8080 -hook-id TOKEN` still runs the service; single-dash long
 * flags are accepted everywhere (`-help`, `-version`, `-database`). Each action imports its
 * module when it runs: `--help` and the admin commands never load Fastify.
 */
import { type Command, createCli, runCli, withExamples } from '@gatehouse/kit/cli/program.ts'
import { addSchemaOptions, schemaFlags, withEnvironmentHelp } from '@gatehouse/kit/cli/schema-options.ts'
import { schema } from '../config.ts'
import { adminSchema } from './admin-schema.ts'
import { addAdminCommands, addUserCommands } from './program-admin.ts'

export function buildProgram(io: { out?: (t: string) => void; err?: (t: string) => void } = {}): Command {
  const program = createCli({
    name: 'notify',
    description:
      'Notification service: channels, incoming webhooks, readers and an inbox.\nWithout a command it runs the service (notify serve); admin commands work on the database serve uses.',
    packageJson: new URL('../../package.json', import.meta.url),
    ...io,
  }).option(
    '-c, --config <file>',
    'JSON config file (default $NOTIFY_CONFIG, else /etc/gatehouse/notify.json when it exists)',
  )
  withExamples(program, [
    'notify -listen 127.0.0.1:8080 -hook-id "$(openssl rand -hex 24)"',
    'notify serve --help',
    'notify token create --user alice --name backup-script',
    'notify token list --json',
    'notify user list',
    'notify user disable alice',
    'notify channel create deploys --display-name Deploys',
    'notify hook create --channel deploys',
    'notify target list',
    'notify audit list --limit 20',
    'notify push keys',
  ])
  const all = (cmd: Command): Record<string, unknown> => cmd.optsWithGlobals()
  const admin = (cmd: Command) => addSchemaOptions(cmd, adminSchema)
  const tokens = () => import('./tokens.ts')

  const serve = program.command('serve', { isDefault: true }).description('run the service (the default command)')
  withExamples(withEnvironmentHelp(addSchemaOptions(serve, schema), schema), [
    'notify serve --listen 127.0.0.1:8080 --database sqlite:/var/lib/notify/notify.db',
    'notify -listen 127.0.0.1:8080 -hook-id "$(openssl rand -hex 24)"',
    'NOTIFY_READER_USERNAME=admin NOTIFY_READER_PASSWORD_FILE=/etc/notify/admin-password NOTIFY_PUBLIC_URL=https://notify.example.org notify serve',
  ]).action(async (_o, cmd: Command) => {
    const o = all(cmd)
    await (await import('./serve.ts')).serve(schemaFlags(o, schema), o.config as string | undefined)
  })

  admin(program.command('migrate'))
    .description('create the database if it does not exist and apply pending migrations (serve does this too)')
    .action(async (_o, cmd: Command) => {
      const { withDatabase } = await import('./database.ts')
      const kind = await withDatabase(all(cmd), async (d) => d.kind, 'create')
      process.stdout.write(`database (${kind}) is up to date\n`)
    })

  withExamples(
    admin(program.command('backup'))
      .description('copy the SQLite database to a new file, consistent while serve runs (PostgreSQL: pg_dump)')
      .argument('<file>', 'the new file (never overwritten)'),
    ['notify backup notify-backup.db'],
  ).action(async (file: string, _o, cmd: Command) => {
    const [{ readDatabase }, { backupDatabase }] = await Promise.all([
      import('./database.ts'),
      import('@gatehouse/kit/cli/backup.ts'),
    ])
    process.stdout.write(`${await readDatabase(all(cmd), async (d) => backupDatabase(d, file))}\n`)
  })

  const user = program.command('user').description('readers (people and system identities)')
  withExamples(
    admin(user.command('list'))
      .description('list readers (never a password hash)')
      .option('--json', 'print JSON for scripts instead of a table'),
    ['notify user list', 'notify user list --json'],
  ).action(async (_o, cmd: Command) => (await import('./users.ts')).userListCommand(all(cmd)))
  addUserCommands(user)

  const token = program
    .command('token')
    .description('reader API tokens for scripts (Authorization: Bearer ntr_...), stored hashed')
  withExamples(
    admin(token.command('create'))
      .description('create a token for a reader; prints the secret once')
      .requiredOption('--user <name>', 'the reader the token acts as')
      .requiredOption('--name <label>', 'what the token is for (shown in lists)')
      .option('--expires-in <duration>', 'the token stops working after this long, e.g. 720h (30 days)')
      .option('--expires-at <time>', 'or at this RFC 3339 time (default: never)')
      .option('--json', 'print {id, user, name, expires_at, secret} as JSON'),
    [
      'notify token create --user alice --name backup-script',
      'notify token create --user alice --name laptop --expires-in 720h',
      'notify token create --user ci --name deploy --json --database postgres://notify@db/notify',
    ],
  ).action(async (_o, cmd: Command) => (await tokens()).tokenCreateCommand(all(cmd)))
  withExamples(
    admin(token.command('list'))
      .description('list tokens (never their secrets), oldest first')
      .option('--user <name>', "only this reader's tokens")
      .option('--json', 'print JSON for scripts instead of a table'),
    ['notify token list', 'notify token list --user alice --json'],
  ).action(async (_o, cmd: Command) => (await tokens()).tokenListCommand(all(cmd)))
  withExamples(
    admin(token.command('revoke'))
      .description('revoke a token at once (its scripts get 401)')
      .argument('<id>', 'the token id (from notify token list)'),
    ['notify token revoke 3f2b0c1e-8d4a-4c55-9b1e-2a6f0d7c9e11'],
  ).action(async (id: string, _o, cmd: Command) => (await tokens()).tokenRevokeCommand(all(cmd), id))
  addAdminCommands(program)
  return program
}

/** Parse and run: the exit code (serve keeps the process running until a signal). */
export function run(argv: string[] = process.argv.slice(2)): Promise<number> {
  return runCli(buildProgram(), argv, { singleDashFlags: true })
}
