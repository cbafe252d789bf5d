/**
 * The artsvc command tree on the kit's app shell: `serve` (the default command, so bare
 * `artsvc` runs the server), `publish`, `mcp-bridge`, `backup` and the management commands `login | list
 * | open | share create|list|revoke`, each with `--help`, examples, exit 0/1/2 and `--json` on
 * the management commands. Each action imports its module when it runs, so `--help` loads no
 * server, HTTP client or database code.
 */
import { CliError, type Command, createCli, runCli, UsageError, withExamples } from '@gatehouse/kit/cli/program.ts'
import { addSchemaOptions, schemaFlags, withEnvironmentHelp } from '@gatehouse/kit/cli/schema-options.ts'
import { readFileSync } from '@gatehouse/kit/startup-builtins.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { backupSchema, bridgeSchema, configSchema, isLoopbackUrl, publishSchema } from '../config.ts'
import { ID_PATTERN } from '../id-pattern.ts'
import { fileErrorWords } from './file-errors.ts'

interface Common {
  url?: string
  json?: boolean
}

export function buildProgram(env: NodeJS.ProcessEnv = process.env): Command {
  const program = createCli({
    name: 'artsvc',
    description:
      'Artifact service: publish static sites and reports, share them, view them signed in.\nWithout a command it runs the server (artsvc serve).',
    packageJson: new URL('../../package.json', import.meta.url),
  }).option(
    '-c, --config <file>',
    "the server's JSON config file (default $ARTSVC_CONFIG, else /etc/gatehouse/artsvc.json when it exists)",
  )
  withExamples(program, [
    'artsvc serve --listen 127.0.0.1:18100',
    'artsvc publish --title "Q3 report" --zip ./site',
    'artsvc list --url https://artifacts.example.com',
    'artsvc serve --help',
  ])

  const serve = program
    .command('serve', { isDefault: true })
    .description('run the server (the default command); settings come mostly from ARTSVC_* variables')
  withExamples(withEnvironmentHelp(addSchemaOptions(serve, configSchema), configSchema), [
    'ARTSVC_PUBLIC_URL=https://artifacts.example.com ARTSVC_CONTENT_URL=https://content.example.net artsvc serve',
    'artsvc serve --config /etc/gatehouse/artsvc.json --listen 127.0.0.1:18100',
  ]).action(async (_o, cmd: Command) => {
    const o = cmd.optsWithGlobals()
    await (await import('./serve.ts')).serve(schemaFlags(o, configSchema), o.config as string | undefined)
  })

  withExamples(
    withEnvironmentHelp(
      addSchemaOptions(
        program
          .command('publish')
          .description(
            'publish a ZIP or a folder (zipped on the fly; a folder stays linked to its artifact, so publishing it again adds a version); prints the URL',
          ),
        publishSchema,
      ),
      publishSchema,
    ),
    [
      'artsvc publish --url https://artifacts.example.com --title "Q3 report" --zip ./site',
      'artsvc publish --title "Q3 report" --zip report.zip --artifact Xq3vT9kLm2Pw7RzA --progress never',
    ],
  ).action(async (o: Record<string, unknown>) =>
    (await import('./publish-command.ts')).publishCommand(schemaFlags(o, publishSchema), env),
  )

  withExamples(
    withEnvironmentHelp(
      addSchemaOptions(
        program
          .command('mcp-bridge')
          .description('a loopback MCP endpoint for local agents, forwarding to an mTLS-protected management URL'),
        bridgeSchema,
      ),
      bridgeSchema,
    ),
    ['ARTSVC_CLIENT_CERT=me.crt ARTSVC_CLIENT_KEY=me.key artsvc mcp-bridge --url https://artifacts.example.com'],
  ).action(async (o: Record<string, unknown>) =>
    (await import('../bridge/command.ts')).mcpBridgeCommand(schemaFlags(o, bridgeSchema)),
  )

  withExamples(
    withEnvironmentHelp(
      addSchemaOptions(
        program
          .command('backup')
          .description(
            'copy the SQLite database to a new file, consistent while serve runs (PostgreSQL: pg_dump); copy the stored files after it',
          )
          .argument('<file>', 'the new file (never overwritten)'),
        backupSchema,
      ),
      backupSchema,
    ),
    ['artsvc backup /var/backups/artsvc.db', 'artsvc backup --storage-root /srv/artifacts artsvc-backup.db'],
  ).action(async (file: string, _o, cmd: Command) => {
    const o = cmd.optsWithGlobals()
    process.stdout.write(
      `${await (await import('./backup.ts')).backup(schemaFlags(o, backupSchema), o.config, file)}\n`,
    )
  })

  const common = (cmd: Command) =>
    cmd
      .option('--url <url>', 'management URL (default $ARTSVC_URL)')
      .option('--json', 'print JSON for scripts instead of text')
  const target = (o: Common) => {
    const url = o.url ?? env.ARTSVC_URL
    if (!url) throw new UsageError('give --url or set ARTSVC_URL (the management URL)')
    const name = o.url === undefined ? 'ARTSVC_URL' : '--url'
    let u: URL
    try {
      u = new URL(url)
    } catch {
      throw new UsageError(`${name} ${JSON.stringify(url)} is not a URL`)
    }
    // The token goes with every request: never in clear over a network (publish's rule too).
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopbackUrl(u)))
      throw new UsageError(`${name} ${JSON.stringify(url)}: must use https (plain http only on loopback)`)
    return { url, env, ...(env.ARTSVC_TOKEN ? { token: env.ARTSVC_TOKEN } : {}) }
  }
  // Checked here, so a mistyped or cut id is a usage error that names it, not the API's pattern.
  const ID = new RegExp(ID_PATTERN)
  const id = (kind: 'artifact' | 'share', value: string, hint: string) => {
    if (!ID.test(value))
      throw new UsageError(
        `${JSON.stringify(value)} is not ${kind === 'artifact' ? 'an artifact' : 'a share'} id (16 letters, digits, - or _; ${hint})`,
      )
    return value
  }
  const ARTIFACTS = 'artsvc list shows them'
  const SHARES = 'artsvc share list <artifact> shows them'
  const run = async (o: Common, work: (m: typeof import('./manage.ts')) => Promise<import('./manage.ts').Output>) => {
    const manage = await import('./manage.ts')
    let out: import('./manage.ts').Output
    try {
      out = await work(manage)
    } catch (err) {
      // manage.ts reports refusals (HTTP errors, not logged in) as PublishError: one line, exit 1.
      // A sign-in failure may quote the provider's words: escaped as well.
      if ((err as Error)?.name === 'PublishError' || err instanceof CliError)
        throw new CliError(escapeTerminal((err as Error).message))
      throw err
    }
    // Titles, labels and names are other people's text: C1 controls and bidirectional
    // overrides, which JSON.stringify leaves raw, are written as \u escapes (terminalJson).
    if (o.json) process.stdout.write(`${terminalJson(out.json, 2)}\n`)
    else for (const line of out.lines) process.stdout.write(`${out.escaped ? line : escapeTerminal(line)}\n`)
  }

  withExamples(
    common(program.command('login'))
      .description(
        'sign in (--browser) or check a given token, and keep it for that server (owner-only file; a browser login renews itself)',
      )
      .option('--browser', "sign in at the server's OpenID provider in a browser (authorization code + PKCE)")
      .option(
        '--client-id <id>',
        'the public client registered for this CLI (default $ARTSVC_CLI_CLIENT_ID, else artsvc-cli)',
      )
      .option(
        '--audience <aud>',
        "the server's ARTSVC_OAUTH_AUDIENCE (default $ARTSVC_OAUTH_AUDIENCE, else its metadata)",
      )
      .option('--token-file <file>', 'read the token from this file (default $ARTSVC_TOKEN)'),
    [
      'artsvc login --browser --url https://artifacts.example.com',
      'ARTSVC_TOKEN=... artsvc login --url https://artifacts.example.com',
      'artsvc login --url https://artifacts.example.com --token-file token.txt',
    ],
  ).action(async (o: Common & { tokenFile?: string; browser?: boolean; clientId?: string; audience?: string }) => {
    if (o.browser) {
      if (o.tokenFile) throw new UsageError('give --browser or --token-file, not both')
      const { url } = target(o)
      const audience = o.audience ?? env.ARTSVC_OAUTH_AUDIENCE
      const { browserLogin } = await import('./browser-login.ts')
      await run(o, () =>
        browserLogin({
          url,
          env,
          clientId: o.clientId ?? env.ARTSVC_CLI_CLIENT_ID ?? 'artsvc-cli',
          ...(audience ? { audience } : {}),
          show: (link) => process.stderr.write(`Open this link in a browser to sign in:\n  ${escapeTerminal(link)}\n`),
        }),
      )
      return
    }
    const token = o.tokenFile ? tokenFromFile(o.tokenFile) : env.ARTSVC_TOKEN
    if (!token) throw new UsageError('give --browser (sign in at the provider), --token-file FILE or set ARTSVC_TOKEN')
    await run(o, (m) => m.login({ ...target(o), token }))
  })

  withExamples(common(program.command('list')).description('the artifacts you can see, newest version first'), [
    'artsvc list --url https://artifacts.example.com',
    'artsvc list --json',
  ]).action((o: Common) => run(o, (m) => m.list(target(o))))

  withExamples(common(program.command('open')).description("print an artifact's viewer URL").argument('<artifact>'), [
    'artsvc open Xq3vT9kLm2Pw7RzA',
  ]).action((artifact: string, o: Common) =>
    run(o, (m) => m.open({ ...target(o), artifact: id('artifact', artifact, ARTIFACTS) })),
  )

  const share = program.command('share').description('create, list and revoke share links of an artifact')
  withExamples(
    common(share.command('create'))
      .description('create a share link (shown once)')
      .argument('<artifact>')
      .option('--label <text>', 'a label for the link')
      .option('--expires-in <duration>', 'the link stops working after this long, e.g. 24h or 168h (a week)')
      .option('--expires-at <time>', 'or at this RFC 3339 time, e.g. 2027-01-31T00:00:00Z')
      .option('--max-views <n>', 'stop after this many views'),
    ['artsvc share create Xq3vT9kLm2Pw7RzA --label reviewers --expires-in 168h --max-views 20'],
  ).action(
    async (
      artifact: string,
      o: Common & { label?: string; expiresIn?: string; expiresAt?: string; maxViews?: string },
    ) => {
      id('artifact', artifact, ARTIFACTS)
      const maxViews = o.maxViews === undefined ? undefined : Number(o.maxViews)
      if (maxViews !== undefined && (!Number.isInteger(maxViews) || maxViews < 1)) {
        throw new UsageError(`--max-views must be a whole number of at least 1, got ${JSON.stringify(o.maxViews)}`)
      }
      const expiresAt = (await import('@gatehouse/kit/cli/expiry.ts')).expiryOf(o)
      return run(o, (m) =>
        m.shareCreate({
          ...target(o),
          artifact,
          ...(o.label ? { label: o.label } : {}),
          ...(expiresAt ? { expiresAt } : {}),
          ...(maxViews ? { maxViews } : {}),
        }),
      )
    },
  )
  withExamples(common(share.command('list')).description('the share links of an artifact').argument('<artifact>'), [
    'artsvc share list Xq3vT9kLm2Pw7RzA',
  ]).action((artifact: string, o: Common) =>
    run(o, (m) => m.shareList({ ...target(o), artifact: id('artifact', artifact, ARTIFACTS) })),
  )
  withExamples(
    common(share.command('revoke')).description('revoke a share link').argument('<artifact>').argument('<share>'),
    ['artsvc share revoke Xq3vT9kLm2Pw7RzA Hk2pW9sQ4mTz7LcB'],
  ).action((artifact: string, shareId: string, o: Common) => {
    id('artifact', artifact, ARTIFACTS)
    id('share', shareId, SHARES)
    return run(o, (m) => m.shareRevoke({ ...target(o), artifact, share: shareId }))
  })
  return program
}

/** The token in `login --token-file FILE`; an unreadable or empty file is said with its path (exit 1). */
function tokenFromFile(file: string): string {
  let token: string
  try {
    token = readFileSync(file, 'utf8').trim()
  } catch (err) {
    throw new CliError(`cannot read the token file ${file}: ${fileErrorWords(err)}`)
  }
  if (!token) throw new CliError(`the token file ${file} is empty`)
  return token
}

/** Parse and run: the exit code (serve and mcp-bridge keep the process running until a signal). */
export function run(argv: string[] = process.argv.slice(2)): Promise<number> {
  return runCli(buildProgram(), argv)
}
