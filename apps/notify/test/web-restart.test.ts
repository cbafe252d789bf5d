/**
 * The web client across a crash of notify (SQLite and PostgreSQL): the real program in a child
 * process, killed with SIGKILL while a signed-in page is open and started again on the same
 * address; what is posted before the page's stream is back arrives once each, in order, with
 * nothing missing and nothing repeated.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { describe, test } from 'node:test'
import { freePort } from '@gatehouse/testkit'
import { signIn } from './browser.ts'
import { MAIN } from './cli-run.ts'
import { ADMIN, ADMIN_PASSWORD, backends, DEV_TOKEN, type Notify } from './helpers.ts'

interface Running {
  child: ChildProcess
  output: () => string
}

/** `notify serve` as an operator runs it; resolves once it logged that it listens. */
async function serve(env: Record<string, string>): Promise<Running> {
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const listening = new Promise<void>((resolve, reject) => {
    const look = (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('notify listening')) resolve()
    }
    child.stdout!.on('data', look)
    child.stderr!.on('data', look)
    child.once('exit', (code) => reject(new Error(`notify exited (${code}) before listening:\n${out}`)))
  })
  await listening
  return { child, output: () => out }
}

function kill(r: Running, signal: NodeJS.Signals): Promise<void> {
  if (r.child.exitCode !== null || r.child.signalCode !== null) return Promise.resolve()
  const exited = new Promise<void>((resolve) => r.child.once('exit', () => resolve()))
  r.child.kill(signal)
  return exited
}

for (const backend of backends) {
  describe(`web client across a notify crash (${backend.name})`, () => {
    test('killed with SIGKILL and started again: the open page catches up once, with no gap and no duplicate', async (t) => {
      const port = await freePort()
      const base = `http://127.0.0.1:${port}`
      const env = {
        NOTIFY_LISTEN: `127.0.0.1:${port}`,
        NOTIFY_DATABASE_URL: await backend.url(),
        NOTIFY_BCRYPT_COST: '4',
        NOTIFY_HOOK_TOKEN: DEV_TOKEN,
        NOTIFY_HOOK_CHANNEL: 'demo',
        NOTIFY_READER_USERNAME: ADMIN,
        NOTIFY_READER_PASSWORD: ADMIN_PASSWORD,
        NOTIFY_PUBLIC_URL: base,
      }
      let notify = await serve(env)
      t.after(() => kill(notify, 'SIGTERM'))
      const s = await signIn({ base } as Notify, ADMIN, ADMIN_PASSWORD, {}, [401])
      t.after(() => s.close())
      const post = async (text: string) => {
        const res = await fetch(`${base}/hooks/${DEV_TOKEN}`, { method: 'POST', body: text })
        assert.equal(res.status, 200, await res.text())
      }
      const card = (text: string) => s.page.locator('li.card', { hasText: text })
      await s.page.getByText('Nothing unread.').waitFor()
      await post('before the crash')
      await card('before the crash').waitFor()

      // The page's stream stays down (refused, as while notify is) until the test lets it
      // through, so what is posted after the restart can only come by the stream's resume.
      const stream = '**/api/v1/stream*'
      await s.page.route(stream, (route) => route.abort('connectionrefused'))
      await kill(notify, 'SIGKILL')
      notify = await serve(env)
      const meanwhile = ['meanwhile 1', 'meanwhile 2', 'meanwhile 3']
      for (const text of meanwhile) await post(text)
      assert.equal(await s.page.locator('li.card', { hasText: 'meanwhile' }).count(), 0)
      await s.page.unroute(stream)
      for (const text of meanwhile) await card(text).waitFor()
      // A later one arrives live, after the replay: anything repeated would be on the page by now.
      await post('after the restart')
      await card('after the restart').waitFor()
      const bodies = await s.page.locator('li.card .meta + *').allInnerTexts()
      assert.deepEqual(
        bodies.map((b) => b.trim()),
        ['after the restart', 'meanwhile 3', 'meanwhile 2', 'meanwhile 1', 'before the crash'],
      )
      // The only console errors are the crash's own: refused reconnections, and a request that
      // was in flight at the SIGKILL (the stream, an unread count), which the kernel reset or
      // cut short; which of these a run sees depends on what was on the wire at that moment.
      assert.deepEqual(
        s.problems.filter(
          (p) => !/net::ERR_(CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE|INCOMPLETE_CHUNKED_ENCODING)\b/.test(p),
        ),
        [],
      )
      assert.match(notify.output(), /notify listening/)
    })
  })
}
