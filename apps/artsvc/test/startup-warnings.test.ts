/** `artsvc serve` as a child process: a secret in a file every user of the host may read is a warning at start. */
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { freePort, startChild, tempDir, waitFor } from '@gatehouse/testkit'
import { baseEnv } from './helpers/harness.ts'

const MAIN = new URL('../src/main.ts', import.meta.url).pathname

test('a cookie secret file every user may read: a warning naming it, and the server runs', async (t) => {
  const dir = tempDir('artsvc-warn-')
  t.after(() => dir.remove())
  const port = await freePort()
  const secret = join(dir.path, 'cookie-secret')
  writeFileSync(secret, 'a-cookie-secret-of-at-least-32-bytes-0123456789')
  chmodSync(secret, 0o644)
  const { ARTSVC_COOKIE_SECRET: _inline, ...env } = baseEnv(dir.path, port, undefined)
  const child = await startChild({
    name: 'artsvc',
    command: process.execPath,
    args: [MAIN],
    env: {
      ...env,
      // Edge access on loopback: nothing is fetched until a request carries a token.
      ARTSVC_AUTH_MODE: 'edge_access',
      ARTSVC_EDGE_ACCESS_TEAM_DOMAIN: 'http://127.0.0.1:9',
      ARTSVC_EDGE_ACCESS_AUD: 'artsvc-test',
      ARTSVC_COOKIE_SECRET_FILE: secret,
      ARTSVC_LOG_LEVEL: 'warn',
      PATH: process.env.PATH ?? '',
    },
    logFile: join(dir.path, 'artsvc.log'),
    probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 204,
  })
  t.after(() => child.stop())
  await waitFor('the warning', () =>
    child
      .log()
      .includes(
        `${secret} holds a secret (ARTSVC_COOKIE_SECRET_FILE) and every user of this host can read it (mode 0644); chmod o-r ${secret}`,
      ),
  )
})
