/**
 * `npm start` support: a local OpenID provider (testkit's oidc-provider, in the stack
 * process, auto-signing in the account `demo`) and artsvc as a child process on embedded
 * defaults (SQLite and filesystem storage under ctx.dataDir), its settings in
 * ctx.dataDir/config.json (what bin/artsvc reads by default). The cookie secret and the
 * OIDC client secret are kept in ctx.dataDir/credentials.json so a restart reuses them.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { StartStack } from '../../packages/kit/src/stack.ts'
import { ensurePortFree, shownPath, supervise, waitHttp } from '../../packages/kit/src/stack-ready.ts'
import { zipFolder } from './src/cli/zip-folder.ts'

const PORT = 18100
const OIDC_PORT = 18109
const AUDIENCE = 'https://artsvc.local'

interface Credentials {
  cookieSecret: string
  clientSecret: string
}

function credentials(dataDir: string): Credentials {
  const file = join(dataDir, 'credentials.json')
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Credentials
  const c = { cookieSecret: randomBytes(32).toString('base64'), clientSecret: randomBytes(32).toString('base64url') }
  writeFileSync(file, `${JSON.stringify(c, null, 2)}\n`, { mode: 0o600 })
  return c
}

/** A one-page site and its ZIP under the data folder, for the printed publish command. */
function demoSite(dataDir: string): string {
  const dir = join(dataDir, 'demo-site')
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'index.html'),
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Gatehouse demo</title></head>\n<body><h1>Published with artsvc</h1><p>This page came from the Gatehouse demo stack.</p></body></html>\n',
  )
  const zip = join(dataDir, 'demo-site.zip')
  writeFileSync(zip, zipFolder(dir))
  return zip
}

export const startStack: StartStack = async (ctx) => {
  const port = ctx.port(PORT)
  const oidcPort = ctx.port(OIDC_PORT)
  const PUBLIC = `http://127.0.0.1:${port}`
  const CONTENT = `http://localhost:${port}`
  await ensurePortFree('artsvc', '127.0.0.1', port, 'HTTP')
  await ensurePortFree('artsvc', '127.0.0.1', oidcPort, 'OpenID provider')
  const c = credentials(ctx.dataDir)
  // The test OpenID provider is a development dependency: fine for a local stack, never for production.
  const { startOidcProvider } = await import('../../packages/testkit/src/oidc.ts')
  const op = await startOidcProvider({
    port: oidcPort,
    clientId: 'artsvc-local',
    clientSecret: c.clientSecret,
    redirectUris: [`${PUBLIC}/api/v1/auth/oidc/callback`],
    audience: AUDIENCE,
    scopes: ['artsvc:mcp'],
    // The CLI's public client (README, `login --browser`), so that sign-in works against the demo too.
    nativeClientId: 'artsvc-cli',
  })
  op.loginAs('demo')
  const logFile = join(ctx.dataDir, 'artsvc.log')
  const log = createWriteStream(logFile, { flags: 'a' })
  // The settings go to the config file bin/artsvc reads by default, so `bin/artsvc backup FILE`
  // finds this instance's database; the secrets stay in the server's environment.
  const configFile = join(ctx.dataDir, 'config.json')
  const config = {
    publicUrl: PUBLIC,
    contentUrl: CONTENT,
    listen: `127.0.0.1:${port}`,
    storageRoot: join(ctx.dataDir, 'storage'),
    oidcIssuer: op.issuer,
    oidcClientId: op.clientId,
    oauthAudience: AUDIENCE,
    // The demo account administers the local instance, so /admin can be tried too.
    adminSubjects: ['demo'],
  }
  writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`)
  const child = spawn(ctx.node, [join(ctx.root, 'apps', 'artsvc', 'src', 'main.ts')], {
    env: {
      PATH: process.env.PATH ?? '',
      ARTSVC_CONFIG: configFile,
      ARTSVC_COOKIE_SECRET: c.cookieSecret,
      ARTSVC_OIDC_CLIENT_SECRET: op.clientSecret,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.pipe(log)
  child.stderr!.pipe(log)
  const running = supervise(child, { what: 'artsvc', log: ctx.log, logFile })
  try {
    await waitHttp({ app: 'artsvc', url: `${PUBLIC}/readyz`, ready: [204], timeoutMs: 30_000, child, logFile })
  } catch (err) {
    await running.stop()
    await op.stop()
    throw err
  }
  running.ready()
  const demoZip = demoSite(ctx.dataDir)
  const token = await op.mintAccessToken({ sub: 'demo', scope: 'artsvc:mcp', expiresIn: 12 * 3600 })
  // Kept in a file so the printed command stays short; the token lives as long as this run's provider.
  const tokenFile = join(ctx.dataDir, 'demo-token')
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 })
  return {
    urls: {
      'library (browser)': `${PUBLIC}/`,
      'admin (browser)': `${PUBLIC}/admin`,
      content: CONTENT,
      'OpenID provider': op.issuer,
    },
    credentials: {
      'browser sign-in': 'automatic as "demo", an administrator here (local OpenID provider)',
      'API token for demo (12 h, this run only)': shownPath(ctx.root, tokenFile),
      kept: join(ctx.dataDir, 'credentials.json'),
    },
    notes: [
      'publish the demo site (then open the printed URL in a browser):',
      `$ ARTSVC_URL=${PUBLIC} ARTSVC_TOKEN=$(cat ${shownPath(ctx.root, tokenFile)}) bin/artsvc publish --title Demo --zip ${shownPath(ctx.root, demoZip)}`,
      'or sign the CLI in through the local provider (open the printed link), then manage from the command line:',
      `$ export ARTSVC_URL=${PUBLIC}`,
      `$ bin/artsvc login --browser --audience ${AUDIENCE}`,
      '$ bin/artsvc list',
      'a consistent copy of its database while it runs (bin/artsvc reads the config file the stack wrote):',
      `$ bin/artsvc backup ${shownPath(ctx.root, join(ctx.dataDir, 'backup'))}-$(date +%Y%m%d-%H%M%S).db`,
    ],
    async stop() {
      await running.stop()
      await op.stop()
      log.end()
    },
  }
}
