/**
 * `npm start` support: a local OpenID provider (testkit's oidc-provider, in the stack
 * process, auto-signing in the account `demo`) and artsvc as a child process on embedded
 * defaults (SQLite and filesystem storage under ctx.dataDir). The cookie secret and the
 * OIDC client secret are kept in ctx.dataDir/credentials.json so a restart reuses them.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { StartStack } from '../../packages/kit/src/stack.ts'

const PORT = 18100
const OIDC_PORT = 18109
const PUBLIC = `http://127.0.0.1:${PORT}`
const CONTENT = `http://localhost:${PORT}`
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

async function waitReady(child: ChildProcess, deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`artsvc exited with code ${child.exitCode}; see artsvc.log`)
    try {
      if ((await fetch(`${PUBLIC}/readyz`)).status === 204) return
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error('artsvc was not ready within 30 s; see artsvc.log')
}

export const startStack: StartStack = async (ctx) => {
  const c = credentials(ctx.dataDir)
  // The test OpenID provider is a development dependency: fine for a local stack, never for production.
  const { startOidcProvider } = await import('../../packages/testkit/src/oidc.ts')
  const op = await startOidcProvider({
    port: OIDC_PORT,
    clientId: 'artsvc-local',
    clientSecret: c.clientSecret,
    redirectUris: [`${PUBLIC}/api/v1/auth/oidc/callback`],
    audience: AUDIENCE,
    scopes: ['artsvc:mcp'],
  })
  op.loginAs('demo')
  const log = createWriteStream(join(ctx.dataDir, 'artsvc.log'), { flags: 'a' })
  const child = spawn(ctx.node, [join(ctx.root, 'apps', 'artsvc', 'src', 'main.ts')], {
    env: {
      PATH: process.env.PATH ?? '',
      ARTSVC_PUBLIC_URL: PUBLIC,
      ARTSVC_CONTENT_URL: CONTENT,
      ARTSVC_LISTEN: `127.0.0.1:${PORT}`,
      ARTSVC_COOKIE_SECRET: c.cookieSecret,
      ARTSVC_STORAGE_ROOT: join(ctx.dataDir, 'storage'),
      ARTSVC_OIDC_ISSUER: op.issuer,
      ARTSVC_OIDC_CLIENT_ID: op.clientId,
      ARTSVC_OIDC_CLIENT_SECRET: op.clientSecret,
      ARTSVC_OAUTH_AUDIENCE: AUDIENCE,
      ARTSVC_ADMIN_SUBJECTS: 'demo-admin',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.pipe(log)
  child.stderr!.pipe(log)
  try {
    await waitReady(child, 30_000)
  } catch (err) {
    child.kill('SIGTERM')
    await op.stop()
    throw err
  }
  const token = await op.mintAccessToken({ sub: 'demo', scope: 'artsvc:mcp', expiresIn: 12 * 3600 })
  return {
    urls: {
      management: PUBLIC,
      content: CONTENT,
      'sign in': `${PUBLIC}/api/v1/auth/login`,
      'OpenID provider': op.issuer,
    },
    credentials: {
      'browser sign-in': 'automatic as "demo" (local OpenID provider)',
      'API token for demo (12 h)': token,
      kept: join(ctx.dataDir, 'credentials.json'),
    },
    notes: [
      `publish: ARTSVC_URL=${PUBLIC} ARTSVC_TOKEN=<API token> node apps/artsvc/src/main.ts publish --title Demo --zip site.zip`,
      'then open the printed /a/<artifact> URL in a browser',
    ],
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        await exited
      }
      await op.stop()
      log.end()
    },
  }
}
