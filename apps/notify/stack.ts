/**
 * `npm start` support: runs notify on embedded defaults (SQLite under ctx.dataDir) with a
 * generated administrator and a demo channel with its development hook. Generated
 * credentials are kept in ctx.dataDir/credentials.json so a restart reuses them.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { StackService, StartStack } from '../../packages/kit/src/stack.ts'
import { ensurePortFree, StackError, shownPath, supervise, waitHttp } from '../../packages/kit/src/stack-ready.ts'

const HOST = '127.0.0.1'
const PORT = 8480

interface Credentials {
  username: string
  password: string
  hookToken: string
}

function credentials(dataDir: string): Credentials {
  const file = join(dataDir, 'credentials.json')
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Credentials
  const c: Credentials = {
    username: 'admin',
    password: randomBytes(18).toString('base64url'),
    hookToken: randomBytes(32).toString('base64url'),
  }
  writeFileSync(file, `${JSON.stringify(c, null, 2)}\n`, { mode: 0o600 })
  return c
}

/** Sign in as the generated administrator and create a reader API token (POST /api/v1/me/tokens). */
async function demoReaderToken(base: string, c: Credentials): Promise<string> {
  const login = await fetch(`${base}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base },
    body: JSON.stringify({ username: c.username, password: c.password }),
  })
  const cookie = login.headers.get('set-cookie')?.split(';')[0]
  if (!login.ok || !cookie) throw new StackError(`notify: signing in as ${c.username} failed (HTTP ${login.status})`)
  const res = await fetch(`${base}/api/v1/me/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base, cookie },
    body: JSON.stringify({ name: 'npm start demo' }),
  })
  if (res.status !== 201) throw new StackError(`notify: creating a reader token failed (HTTP ${res.status})`)
  return ((await res.json()) as { secret: string }).secret
}

export const startStack: StartStack = async (ctx) => {
  const port = ctx.port(PORT)
  const LISTEN = `${HOST}:${port}`
  const URL_BASE = `http://${LISTEN}`
  await ensurePortFree('notify', HOST, port, 'HTTP')
  const c = credentials(ctx.dataDir)
  const logFile = join(ctx.dataDir, 'notify.log')
  const log = createWriteStream(logFile, { flags: 'a' })
  // The settings go to the config file bin/notify reads by default, so `bin/notify token list`
  // finds this database; the secrets stay in the server's environment.
  const configFile = join(ctx.dataDir, 'config.json')
  const config = {
    listen: LISTEN,
    database: `sqlite:${join(ctx.dataDir, 'notify.db')}`,
    readerUsername: c.username,
    publicUrl: URL_BASE,
    hookChannel: 'demo',
  }
  writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`)
  const child = spawn(ctx.node, [join(ctx.root, 'apps', 'notify', 'src', 'main.ts'), 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      NOTIFY_CONFIG: configFile,
      NOTIFY_READER_PASSWORD: c.password,
      NOTIFY_HOOK_TOKEN: c.hookToken,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.pipe(log)
  child.stderr!.pipe(log)
  const running = supervise(child, { what: 'notify', log: ctx.log, logFile })
  try {
    await waitHttp({ app: 'notify', url: `${URL_BASE}/readyz`, timeoutMs: 20_000, child, logFile })
  } catch (err) {
    await running.stop()
    throw err
  }
  running.ready()
  // A reader API token for the printed curl command (one per start; older ones stay valid).
  const readerToken = await demoReaderToken(URL_BASE, c)
  const tokenFile = join(ctx.dataDir, 'reader-token')
  writeFileSync(tokenFile, `${readerToken}\n`, { mode: 0o600 })
  const service: StackService = {
    urls: { api: URL_BASE, hook: `${URL_BASE}/hooks/<hook token>` },
    credentials: {
      'reader (administrator)': `${c.username} / ${c.password}`,
      'demo hook token': c.hookToken,
      kept: join(ctx.dataDir, 'credentials.json'),
    },
    notes: [
      'post to the demo channel through its hook (a plain body and ntfy-style headers, or Slack-style JSON):',
      `$ curl -H 'Title: Demo' -H 'Priority: high' -d 'hello from the demo' ${URL_BASE}/hooks/${c.hookToken}`,
      'read the channel as a script does, with a reader API token (or sign in with the password above):',
      `$ curl -H "Authorization: Bearer $(cat ${shownPath(ctx.root, tokenFile)})" '${URL_BASE}/api/v1/notifications?channel=demo'`,
      'reader API tokens, created and revoked from the command line:',
      '$ bin/notify token list',
    ],
    async stop() {
      await running.stop()
      log.end()
    },
  }
  return service
}
