/**
 * The edgegate command tree. Each action imports its module when it runs, so `--help` and a
 * list command load only what they use (no Fastify or undici outside `serve`).
 */
import { type Command, createCli, withExamples } from '@gatehouse/kit/cli/program.ts'
import { addSchemaOptions, schemaFlags } from '@gatehouse/kit/cli/schema-options.ts'
import { AppError } from '@gatehouse/kit/errors.ts'
import { alertSchema, cliSchema, serveSchema, statusSchema } from '../config.ts'

const VERDICTS = { approve: 'approved', block: 'blocked', pending: 'pending' } as const

/** The service's errors that say an argument is malformed whatever the database holds. */
const USAGE_CODES: ReadonlySet<string> = new Set(['invalid_fingerprint', 'label_too_long', 'label_invalid'])

/** Exit 2 (usage) for a malformed argument the service refused, as for one commander refused. */
export function exitCodeFor(err: unknown): number | undefined {
  return err instanceof AppError && USAGE_CODES.has(err.code) ? 2 : undefined
}

export function buildProgram(io: { out?: (t: string) => void; err?: (t: string) => void } = {}): Command {
  const program = createCli({
    name: 'edgegate',
    description:
      'Edge control plane: gate node registry, fingerprint decisions and policy sync.\nAdmin commands work on the database serve uses.',
    packageJson: new URL('../../package.json', import.meta.url),
    ...io,
  }).option(
    '-c, --config <file>',
    'JSON config file (default $EDGEGATE_CONFIG, else /etc/gatehouse/edgegate.json when it exists)',
  )
  withExamples(program, [
    'edgegate serve --tls-cert server.crt --tls-key server.key',
    'edgegate node add --kind sshgate edge-1',
    'edgegate decision approve --instance edge-1 --label "ci runner" 0123456789abcdef0123456789abcdef',
    'edgegate fingerprint list --instance edge-1',
    'edgegate status',
  ])
  // Every action sees its own options and the program's (--config).
  const all = (cmd: Command): Record<string, unknown> => cmd.optsWithGlobals()
  const admin = (cmd: Command) => addSchemaOptions(cmd, cliSchema)
  const json = (cmd: Command) => cmd.option('--json', 'print JSON for scripts instead of a table')
  const commands = () => import('./commands.ts')
  const reports = () => import('./reports.ts')

  withExamples(addSchemaOptions(program.command('serve').description('run the control plane (HTTPS)'), serveSchema), [
    'edgegate serve --listen 0.0.0.0:8443 --tls-cert server.crt --tls-key server.key --database sqlite:/var/lib/edgegate/edgegate.db',
  ]).action(async (_o, cmd: Command) => {
    const o = all(cmd)
    await (await import('./serve.ts')).serve(schemaFlags(o, serveSchema), o.config as string | undefined)
  })

  admin(program.command('migrate'))
    .description('create the database if it does not exist and apply pending migrations (serve does this too)')
    .action(async (_o, cmd: Command) => (await commands()).migrate(all(cmd)))

  withExamples(
    admin(program.command('backup'))
      .description('copy the SQLite database to a new file, consistent while serve runs (PostgreSQL: pg_dump)')
      .argument('<file>', 'the new file (never overwritten)'),
    ['edgegate backup edgegate-backup.db'],
  ).action(async (file: string, _o, cmd: Command) => (await commands()).backup(all(cmd), file))

  const alert = program.command('alert').description("the team's alert channel (--alert-url)")
  withExamples(
    addSchemaOptions(
      alert.command('test').description('send a test alert to --alert-url now, the way serve sends alerts'),
      alertSchema,
    ),
    ['edgegate alert test --alert-url https://notify.example.org/hooks/TOKEN'],
  ).action(async (_o, cmd: Command) => {
    const o = all(cmd)
    await (await import('./alert.ts')).alertTest(schemaFlags(o, alertSchema), o.config as string | undefined)
  })

  const pki = program
    .command('pki')
    .description(
      "a private CA for mutual TLS: the control plane's server certificate and the nodes' client certificates",
    )
  withExamples(
    pki
      .command('init')
      .description('create a CA (ca.key, ca.crt) in a new owner-only folder; never overwrites one')
      .argument('<dir>', 'the folder for the CA and the certificates it issues')
      .option('--name <name>', "the CA's common name", 'Gatehouse edge CA')
      .option('--days <n>', 'validity in days (default 3650)'),
    ['edgegate pki init /etc/gatehouse/pki'],
  ).action(async (dir: string, o: Record<string, unknown>) => (await import('./pki.ts')).pkiInit(dir, o))
  withExamples(
    pki
      .command('issue')
      .description(
        'issue a server certificate for serve (--server) or a client certificate for a node (--client, CN and DNS name = the instance id)',
      )
      .argument('<dir>', 'the CA folder (pki init)')
      .option('--server <names...>', 'DNS names and IP addresses the nodes reach the control plane by')
      .option('--client <instance-id>', 'the node, as registered with node add --cert-name')
      .option('--days <n>', 'validity in days (default 397)')
      .option('--replace', 'issue a new key and certificate in place of existing ones (a renewal)'),
    [
      'edgegate pki issue /etc/gatehouse/pki --server cp.example.net 10.0.0.5',
      'edgegate pki issue /etc/gatehouse/pki --client edge-1',
    ],
  ).action(async (dir: string, o: Record<string, unknown>) => (await import('./pki.ts')).pkiIssue(dir, o))
  withExamples(
    pki
      .command('list')
      .description('the CA and the certificates in the folder, what expires first on top (renew with issue --replace)')
      .argument('<dir>', 'the CA folder (pki init)')
      .option('--json', 'print JSON for scripts instead of a table'),
    ['edgegate pki list /etc/gatehouse/pki'],
  ).action(async (dir: string, o: Record<string, unknown>) => (await import('./pki.ts')).pkiList(dir, o))

  withExamples(
    json(addSchemaOptions(program.command('status'), statusSchema)).description(
      'whether serve answers at its --listen address, the database, nodes and when each was last seen, decisions and fingerprints waiting for one',
    ),
    ['edgegate status', 'edgegate status --listen 10.0.0.5:8443 --json'],
  ).action(async (_o, cmd: Command) => (await reports()).status(all(cmd)))

  const node = program.command('node').description('register, list, disable, re-key and remove gate nodes')
  withExamples(
    admin(node.command('add'))
      .description('register a node; a token node gets its bearer token printed once')
      .requiredOption('--kind <kind>', 'sshgate, tlsgate, websignal or log_watcher')
      .option('--cert-name <name>', 'authenticate with a client certificate whose CN or DNS SAN is this')
      .option('--cert-fingerprint <sha256>', 'authenticate with the client certificate of this SHA-256 (hex)')
      .argument('<instance-id>', "the node's instance_id"),
    ['edgegate node add --kind sshgate edge-1', 'edgegate node add --kind tlsgate --cert-name tls-1.example.net tls-1'],
  ).action(async (id: string, _o, cmd: Command) => (await commands()).nodeAdd(all(cmd), id))
  json(admin(node.command('list')))
    .description('list nodes (tokens are never shown)')
    .action(async (_o, cmd: Command) => (await commands()).nodeList(all(cmd)))
  for (const [name, active] of [
    ['disable', false],
    ['enable', true],
  ] as const) {
    admin(node.command(name))
      .description(`${name} a node (${active ? 'it may sync again' : 'its requests get 403 until enabled'})`)
      .argument('<instance-id>')
      .action(async (id: string, _o, cmd: Command) => (await commands()).nodeActive(all(cmd), id, active))
  }
  withExamples(
    json(admin(node.command('show')))
      .description(
        'one node: its kind (a gate of another kind gets 403 wrong_node_kind), state, credential type, last seen',
      )
      .argument('<instance-id>'),
    ['edgegate node show edge-1', 'edgegate node show edge-1 --json'],
  ).action(async (id: string, _o, cmd: Command) => (await commands()).nodeShow(all(cmd), id))
  withExamples(
    admin(node.command('rotate-token'))
      .description("replace a token node's bearer token (the old one stops working); prints the node's kind")
      .option('--kind <kind>', 'refuse, changing nothing, unless the node is of this kind')
      .argument('<instance-id>'),
    ['edgegate node rotate-token edge-1', 'edgegate node rotate-token --kind tlsgate tls-1'],
  ).action(async (id: string, _o, cmd: Command) => (await commands()).nodeRotate(all(cmd), id))

  withExamples(
    admin(node.command('remove'))
      .description('remove a node: its credential stops working; one that has been seen must be disabled first')
      .option(
        '--purge',
        'also remove its fingerprints, signals and reports; its decisions become deletions its id pulls',
      )
      .argument('<instance-id>'),
    ['edgegate node remove edge-typo', 'edgegate node disable edge-1 && edgegate node remove --purge edge-1'],
  ).action(async (id: string, _o, cmd: Command) => (await commands()).nodeRemove(all(cmd), id))

  const adminGroup = program.command('admin').description('dashboard and API administrators')
  const expiryOptions = (cmd: Command) =>
    cmd
      .option('--expires-in <duration>', 'the token stops working after this long, e.g. 2160h (90 days)')
      .option('--expires-at <time>', 'or at this RFC 3339 time (default: never)')
  withExamples(
    expiryOptions(admin(adminGroup.command('add'))).description('add an administrator; prints its API token once'),
    ['edgegate admin add alice', 'edgegate admin add deploy-bot --expires-in 2160h'],
  )
    .argument('<name>')
    .action(async (name: string, _o, cmd: Command) => (await commands()).adminAdd(all(cmd), name))
  json(admin(adminGroup.command('list')))
    .description('list administrators')
    .action(async (_o, cmd: Command) => (await commands()).adminList(all(cmd)))
  withExamples(
    expiryOptions(admin(adminGroup.command('rotate-token'))).description(
      "replace an administrator's token; the old one and its dashboard sessions stop working",
    ),
    ['edgegate admin rotate-token alice', 'edgegate admin rotate-token deploy-bot --expires-in 2160h'],
  )
    .argument('<name>')
    .action(async (name: string, _o, cmd: Command) => (await commands()).adminRotate(all(cmd), name))
  admin(adminGroup.command('remove'))
    .description('remove an administrator (its token and sessions stop working)')
    .argument('<name>')
    .action(async (name: string, _o, cmd: Command) => (await commands()).adminRemove(all(cmd), name))

  const decision = program.command('decision').description('verdicts on fingerprints, per gate instance')
  const instance = (cmd: Command) => cmd.option('--instance <id>', 'the gate instance_id (decision scope; required)')
  for (const [name, status] of Object.entries(VERDICTS)) {
    const cmd = instance(admin(decision.command(name)))
      .description(
        status === 'approved'
          ? 'approve a fingerprint: its clients reach the backend'
          : status === 'blocked'
            ? 'block a fingerprint'
            : 'mark a fingerprint pending (stopped, even where unknown clients are let through)',
      )
      .argument('<fingerprint>', 'as the gate lists it: 32 hexadecimal characters (SSH gate) or a JA4 (TLS gate)')
    if (status === 'approved') cmd.option('--label <text>', 'label stored with the approval')
    cmd.option('--for <duration>', 'only for this long (1m to 8760h, e.g. 4h); then the decision is deleted')
    withExamples(cmd, [
      `edgegate decision ${name} --instance edge-1 0123456789abcdef0123456789abcdef`,
      ...(status === 'blocked'
        ? ['edgegate decision block --instance edge-1 --for 24h 0123456789abcdef0123456789abcdef']
        : []),
    ]).action(async (fp: string, _o, c: Command) => (await commands()).decide(all(c), status, fp))
  }
  withExamples(
    json(instance(admin(decision.command('enroll'))))
      .description(
        'approve every fingerprint of the instance that has no decision yet (after an enrollment window); --dry-run lists them first',
      )
      .option('--since <time>', 'only those last seen since this RFC 3339 time, or this long ago (168h: a week)')
      .option('--label <text>', 'label stored with each approval', 'enrolled')
      .option('--limit <n>', 'at most this many, the most recently seen first (1-10000)', '1000')
      .option('--dry-run', 'list what would be approved and change nothing'),
    [
      'edgegate decision enroll --instance edge-1 --since 168h --dry-run',
      'edgegate decision enroll --instance edge-1 --since 168h --label "enrolled 2026-11"',
    ],
  ).action(async (_o, c: Command) => (await commands()).enroll(all(c)))
  withExamples(
    json(admin(decision.command('import')))
      .description(
        "decisions from a file, in one transaction: what `decision list --json` prints, or a gate's `list --json` with --instance; automated and undecided entries are skipped",
      )
      .argument('<file>', 'the JSON file, or - for standard input')
      .option('--instance <id>', "the gate a gate's list came from")
      .option('--dry-run', 'check the file and say what would change, changing nothing'),
    [
      'edgegate decision list --source manual --limit 100000 --json > decisions.json',
      'edgegate decision import --dry-run decisions.json',
      'sshproxy list --json | edgegate decision import --instance edge-1 -',
    ],
  ).action(async (file: string, _o, c: Command) => (await commands()).decisionImport(all(c), file))
  instance(admin(decision.command('label')))
    .description("replace a decision's label")
    .argument('<fingerprint>')
    .argument('<label>')
    .action(async (fp: string, label: string, _o, cmd: Command) => (await commands()).label(all(cmd), fp, label))
  instance(admin(decision.command('delete')))
    .description('delete a decision (the gate treats the fingerprint as pending)')
    .argument('<fingerprint>')
    .action(async (fp: string, _o, cmd: Command) => (await commands()).remove(all(cmd), fp))
  withExamples(
    json(admin(decision.command('list')))
      .description('list decisions, newest first')
      .option('--instance <id>', 'only this gate instance')
      .option('--status <status>', 'approved, blocked or pending')
      .option(
        '--source <source>',
        "manual (people, through the CLI, dashboard or API) or an automated controller's name",
      )
      .option('--limit <n>', 'at most this many (1-100000)', '100'),
    ['edgegate decision list --status blocked', 'edgegate decision list --instance edge-1 --source manual --json'],
  ).action(async (_o, cmd: Command) => (await reports()).decisionList(all(cmd)))

  const web = () => import('./web.ts')
  const enforcement = program
    .command('enforcement')
    .description('web enforcement: the kill switch every serve process obeys, and the automated blocks in force')
  withExamples(json(admin(enforcement.command('status'))).description('kill switch and automated blocks in force'), [
    'edgegate enforcement status',
    'edgegate enforcement status --json',
  ]).action(async (_o, cmd: Command) => (await web()).enforcementStatus(all(cmd)))
  withExamples(
    json(admin(enforcement.command('disable'))).description(
      'engage the kill switch: revoke every automated block (gates drop them on their next pull) and create none until enabled; audited',
    ),
    ['edgegate enforcement disable'],
  ).action(async (_o, cmd: Command) => (await web()).enforcementSwitch(all(cmd), true))
  withExamples(
    json(admin(enforcement.command('enable'))).description(
      'release the kill switch: each serve process follows its --web-enforcement-mode again; audited',
    ),
    ['edgegate enforcement enable'],
  ).action(async (_o, cmd: Command) => (await web()).enforcementSwitch(all(cmd), false))

  const pair = program
    .command('pair')
    .description('pair web signal nodes with TLS gates (their signals match that gate whatever the SNI)')
  json(admin(pair.command('list')))
    .description('list pairings')
    .action(async (_o, cmd: Command) => (await web()).pairList(all(cmd)))
  withExamples(
    json(admin(pair.command('add')))
      .description('pair a websignal (or log_watcher) node with a tlsgate node; audited')
      .argument('<websignal-id>')
      .argument('<tlsgate-id>'),
    ['edgegate pair add web-1 tls-1'],
  ).action(async (w: string, g: string, _o, cmd: Command) => (await web()).pairAdd(all(cmd), w, g))
  json(admin(pair.command('remove')))
    .description('remove a pairing; audited')
    .argument('<websignal-id>')
    .argument('<tlsgate-id>')
    .action(async (w: string, g: string, _o, cmd: Command) => (await web()).pairRemove(all(cmd), w, g))

  const auditGroup = program.command('audit').description('the audit log: who changed what, when')
  withExamples(
    json(admin(auditGroup.command('list')))
      .description(
        'audit entries, newest first: decisions, nodes, administrators, pairings, the kill switch, controller passes',
      )
      .option('--since <time>', 'only entries since this RFC 3339 time, or this long ago (24h, 90m)')
      .option('--actor <actor>', 'only this actor (cli:<user>, admin:<name>, controller:web)')
      .option(
        '--action <action>',
        'only this action (decision.blocked) or family (decision, node, admin, web_enforcement)',
      )
      .option('--target <target>', 'only this target (INSTANCE/FINGERPRINT, a node id, an administrator)')
      .option('--limit <n>', 'at most this many (1-10000)', '100'),
    [
      'edgegate audit list --since 24h',
      'edgegate audit list --action decision --target edge-1/0123456789abcdef0123456789abcdef',
      'edgegate audit list --actor admin:alice --json',
    ],
  ).action(async (_o, cmd: Command) => (await reports()).auditList(all(cmd)))

  const fingerprint = program.command('fingerprint').description('fingerprints the gates observed')
  withExamples(
    json(admin(fingerprint.command('list')))
      .description('list observed fingerprints, most recently seen first, with their decision')
      .option('--instance <id>', 'only this gate instance')
      .option('--status <status>', 'by decision: approved, blocked, pending or none (no decision yet)')
      .option('--limit <n>', 'at most this many (1-10000)', '100'),
    ['edgegate fingerprint list --status none', 'edgegate fingerprint list --instance edge-1 --json'],
  ).action(async (_o, cmd: Command) => (await reports()).fingerprintList(all(cmd)))
  return program
}
