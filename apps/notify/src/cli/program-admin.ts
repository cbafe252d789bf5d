/**
 * The admin commands of the user panel, channels and their hooks, action targets, the audit
 * log and Web Push on the command line (`notify user|channel|hook|target|audit|push ...`),
 * registered on the notify program.
 * Each action imports its module when it runs.
 */
import type { Command } from '@gatehouse/kit/cli/program.ts'
import { withExamples } from '@gatehouse/kit/cli/program.ts'
import { addSchemaOptions } from '@gatehouse/kit/cli/schema-options.ts'
import { adminSchema, hookSchema, passwordSchema, targetSchema } from './admin-schema.ts'

const all = (cmd: Command): Record<string, unknown> => cmd.optsWithGlobals()
const json = (cmd: Command) => cmd.option('--json', 'print JSON for scripts instead of text')

export function addUserCommands(user: Command): void {
  const users = () => import('./users.ts')
  const admin = (cmd: Command) => addSchemaOptions(cmd, adminSchema)
  withExamples(
    json(addSchemaOptions(user.command('create'), passwordSchema))
      .description('create a reader: a person with a local password, or a system identity for scripts')
      .argument('<name>', 'user name (a-z, 0-9, ., _, -)')
      .option('--password-file <file>', "the password's file, first line (- for standard input); 12+ characters")
      .option('--admin', 'an installation administrator')
      .option('--system', 'a system identity (no password; use notify token create for its scripts)'),
    [
      'notify user create alice --password-file /run/secrets/alice',
      "printf '%s\\n' 'correct horse battery' | notify user create bob --admin --password-file -",
      'notify user create ci --system',
    ],
  ).action(async (name: string, _o, cmd: Command) => (await users()).userCreateCommand(all(cmd), name))
  const changes = [
    ['promote', 'make the reader an installation administrator'],
    ['demote', 'make the administrator a reader (never the last enabled human administrator)'],
    ['enable', 'let the reader sign in again'],
    ['disable', 'stop the reader signing in and end their sessions (never the last enabled human administrator)'],
  ] as const
  for (const [change, description] of changes) {
    withExamples(
      json(admin(user.command(change)))
        .description(description)
        .argument('<name>', 'user name'),
      [`notify user ${change} alice`],
    ).action(async (name: string, _o, cmd: Command) => (await users()).userChangeCommand(all(cmd), change, name))
  }
  withExamples(
    json(admin(user.command('revoke-sessions')))
      .description('end every browser and desktop session of the reader (and their open streams)')
      .argument('<name>', 'user name'),
    ['notify user revoke-sessions alice'],
  ).action(async (name: string, _o, cmd: Command) => (await users()).userRevokeSessionsCommand(all(cmd), name))
  withExamples(
    addSchemaOptions(user.command('reset-password'), passwordSchema)
      .description("set a local reader's password; their sessions end")
      .argument('<name>', 'user name')
      .requiredOption('--password-file <file>', "the new password's file, first line (- for standard input)"),
    ['notify user reset-password alice --password-file /run/secrets/alice'],
  ).action(async (name: string, _o, cmd: Command) => (await users()).userResetPasswordCommand(all(cmd), name))
}

export function addAdminCommands(program: Command): void {
  const admin = (cmd: Command) => addSchemaOptions(cmd, adminSchema)
  addChannelCommands(program)
  const targets = () => import('./targets.ts')
  const target = program
    .command('target')
    .description('action targets: the callbacks card buttons and slash commands call')
  withExamples(json(admin(target.command('list'))).description('list targets (never their credentials)'), [
    'notify target list',
    'notify target list --json',
  ]).action(async (_o, cmd: Command) => (await targets()).targetListCommand(all(cmd)))
  withExamples(
    json(addSchemaOptions(target.command('set'), targetSchema))
      .description('create or replace a target (needs the committed action key, or NOTIFY_ACTION_KEY to commit it)')
      .argument('<name>', 'target name (a-z, 0-9, _, -)')
      .requiredOption('--url <url>', 'the exact callback URL (https, or http with --allow-private)')
      .option('--allow-private', 'allow a loopback, private or link-local destination')
      .option('--credential-file <file>', 'bearer credential sent to the target, first line (- for standard input)')
      .option('--no-credential', 'remove the stored credential')
      .option('--description <text>', 'what the target does'),
    [
      'notify target set deploy --url https://ci.example.org/hooks/deploy --credential-file /run/secrets/ci',
      'notify target set runbook --url http://10.0.0.5:8080/run --allow-private',
    ],
  ).action(async (name: string, _o, cmd: Command) => (await targets()).targetSetCommand(all(cmd), name))
  withExamples(
    admin(target.command('delete'))
      .description('delete a target: every button naming it fails cleanly from now on, on every node')
      .argument('<name>', 'target name'),
    ['notify target delete deploy'],
  ).action(async (name: string, _o, cmd: Command) => (await targets()).targetDeleteCommand(all(cmd), name))

  const audit = program.command('audit').description('the administrative audit log')
  withExamples(
    json(admin(audit.command('list')))
      .description('audit entries, newest first')
      .option('--limit <n>', 'at most this many entries (default 50)')
      .option('--before <id>', 'only entries older than this id (the next page)'),
    ['notify audit list', 'notify audit list --limit 200 --json'],
  ).action(async (_o, cmd: Command) => (await import('./audit.ts')).auditListCommand(all(cmd)))

  const push = program.command('push').description('Web Push: the VAPID key and the subscriptions')
  withExamples(
    json(admin(push.command('keys'))).description(
      'the VAPID public key browsers subscribe with (never the private key)',
    ),
    ['notify push keys'],
  ).action(async (_o, cmd: Command) => (await import('./push.ts')).pushKeysCommand(all(cmd)))
  withExamples(
    json(admin(push.command('list')))
      .description("readers' push subscriptions (never their keys or endpoint URLs)")
      .option('--user <name>', "only this reader's subscriptions"),
    ['notify push list', 'notify push list --user alice --json'],
  ).action(async (_o, cmd: Command) => (await import('./push.ts')).pushListCommand(all(cmd)))
}

function addChannelCommands(program: Command): void {
  const admin = (cmd: Command) => addSchemaOptions(cmd, adminSchema)
  const channels = () => import('./channels.ts')
  const hooks = () => import('./hooks.ts')
  const channel = program.command('channel').description('channels: where notifications are stored and read')
  withExamples(json(admin(channel.command('list'))).description('list every channel, private ones too'), [
    'notify channel list',
    'notify channel list --json',
  ]).action(async (_o, cmd: Command) => (await channels()).channelListCommand(all(cmd)))
  withExamples(
    json(addSchemaOptions(channel.command('create'), hookSchema))
      .description("create a channel and its publishing hook, whose URL is printed once (the API's rules)")
      .argument('<name>', 'the URL name, which cannot change later (a-z, 0-9, _, -)')
      .option('--display-name <text>', 'the name readers see (default: the URL name)')
      .option('--description <text>', 'what the channel is for')
      .option('--private', 'only administrators and members read it (default: public)')
      .option('--color <#rrggbb>', 'accent colour (default #4f6bed)'),
    [
      'notify channel create deploys --display-name Deploys --description "CI deployments"',
      "notify channel create security --private --color '#d93f0b'",
      'notify channel create alerts --json',
    ],
  ).action(async (name: string, _o, cmd: Command) => (await channels()).channelCreateCommand(all(cmd), name))

  const hook = program
    .command('hook')
    .description('incoming webhooks: secret URLs (/hooks/<token>) that publish to a channel')
  withExamples(
    json(admin(hook.command('list')))
      .description('list hooks (never their tokens), oldest first')
      .option('--channel <name>', "only this channel's hooks"),
    ['notify hook list', 'notify hook list --channel deploys --json'],
  ).action(async (_o, cmd: Command) => (await hooks()).hookListCommand(all(cmd)))
  withExamples(
    json(addSchemaOptions(hook.command('create'), hookSchema))
      .description('create a hook on an existing channel; prints its URL once')
      .requiredOption('--channel <name>', 'the channel it publishes to')
      .option('--lock-channel', "ignore a payload's channel (default: a payload may pick another public channel)"),
    ['notify hook create --channel deploys', 'notify hook create --channel deploys --lock-channel --json'],
  ).action(async (_o, cmd: Command) => (await hooks()).hookCreateCommand(all(cmd)))
  withExamples(
    json(addSchemaOptions(hook.command('new-url'), hookSchema))
      .description(
        'issue another URL for a hook (same channel and policy), printed once; the old one works until revoked',
      )
      .argument('<id>', 'the hook id (from notify hook list)'),
    ['notify hook new-url wh_0123456789abcdefghij', 'notify hook new-url wh_0123456789abcdefghij --json'],
  ).action(async (id: string, _o, cmd: Command) => (await hooks()).hookNewUrlCommand(all(cmd), id))
  withExamples(
    json(admin(hook.command('revoke')))
      .description('revoke a hook: deliveries to its URL are refused at once; what it delivered stays')
      .argument('<id>', 'the hook id (from notify hook list)'),
    ['notify hook revoke wh_0123456789abcdefghij'],
  ).action(async (id: string, _o, cmd: Command) => (await hooks()).hookRevokeCommand(all(cmd), id))
}
