/**
 * The control socket (src/control-socket.ts): `serve` answers /readyz and /healthz on a Unix
 * socket for commands on the host, and `status` asks it before the HTTPS port.
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { freePort, tempDir } from '@gatehouse/testkit'
import { cli, type Edgegate, makeTls, startEdgegate } from './helpers.ts'

const tls = makeTls()

/** GET `path` on a Unix socket: status, the serve address header and the body. */
function ask(socket: string, path: string, method = 'GET'): Promise<{ status: number; listen: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path, method }, (res) => {
      let body = ''
      res.on('data', (c) => (body += c))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, listen: String(res.headers['edgegate-listen']), body }),
      )
    })
    req.on('error', reject)
    req.end()
  })
}

describe('control socket', () => {
  const dir = tempDir('edgegate-control-')
  after(() => dir.remove())
  const database = `sqlite:${join(dir.path, 'edgegate.db')}`
  const socket = join(dir.path, 'control.sock')
  // A serve expected to stop at start-up (it exits by itself).
  const serveOnce = async (controlSocket: string) =>
    cli([
      'serve',
      ...['--listen', `127.0.0.1:${await freePort()}`, '--database', database],
      ...['--tls-cert', tls.server.certPath, '--tls-key', tls.server.keyPath, '--control-socket', controlSocket],
    ])
  const status = async (listen: string, extra: string[] = []) => {
    const r = await cli(['status', '--database', database, '--listen', listen, '--control-socket', socket, ...extra])
    assert.equal(r.code, 0, r.stderr)
    return r.stdout
  }

  test('status asks serve on its socket, only for the address that serve listens on; a killed serve leaves a file the next one replaces', async () => {
    let gate: Edgegate | undefined = await startEdgegate(database, tls, ['--control-socket', socket])
    try {
      const listen = `127.0.0.1:${gate.port}`
      assert.equal(statSync(socket).mode & 0o777, 0o660)
      const up = await status(listen)
      assert.match(
        up,
        new RegExp(
          `^server: answering at https://127\\.0\\.0\\.1:${gate.port} \\(/readyz 200, ready; listen address from --listen; asked on the control socket ${socket.replace(/[.]/g, '\\.')}\\)\n`,
        ),
      )
      const json = JSON.parse(await status(listen, ['--json'])).server
      assert.deepEqual([json.answering, json.status, json.control_socket], [true, 200, socket])

      // The two probes and nothing else: no credential is asked there, so no API either.
      assert.deepEqual(await ask(socket, '/readyz'), {
        status: 200,
        listen: `https://127.0.0.1:${gate.port}`,
        body: '{"status":"ready"}',
      })
      assert.equal((await ask(socket, '/healthz')).status, 200)
      for (const [path, method] of [
        ['/metrics', 'GET'],
        ['/api/nodes', 'GET'],
        ['/readyz', 'POST'],
        ['/../readyz', 'GET'],
      ] as const) {
        const r = await ask(socket, path, method)
        assert.equal(r.status, 404, `${method} ${path}`)
        assert.match(r.body, /answers GET \/readyz and \/healthz only/)
      }

      // Asked about another address (a second edgegate on the host), this serve's answer is not
      // taken for it: the HTTPS port is asked, and says it is not there.
      const nobody = await freePort()
      const elsewhere = JSON.parse(await status(`127.0.0.1:${nobody}`, ['--json'])).server
      assert.deepEqual(
        [elsewhere.answering, elsewhere.error, elsewhere.control_socket],
        [false, 'ECONNREFUSED', undefined],
      )

      // A second serve on the same socket is refused, naming why; the first keeps it.
      const second = await serveOnce(socket)
      assert.equal(second.code, 1)
      assert.match(second.stderr, /control socket .*control\.sock: another process answers there/)
      assert.equal((await ask(socket, '/readyz')).status, 200)

      // kill -9 leaves the socket file: status goes on to HTTPS, and the next serve replaces it.
      await gate.child.stop('SIGKILL')
      await gate.stop()
      gate = undefined
      assert.ok(existsSync(socket))
      const dead = JSON.parse(await status(listen, ['--json'])).server
      assert.deepEqual([dead.answering, dead.error], [false, 'ECONNREFUSED'])
      gate = await startEdgegate(database, tls, ['--control-socket', socket])
      assert.match(await status(`127.0.0.1:${gate.port}`), /^server: answering .*; asked on the control socket /)

      // A clean stop removes it.
      await gate.stop()
      gate = undefined
      assert.equal(existsSync(socket), false)
    } finally {
      await gate?.stop()
    }
  })

  test('a control socket that cannot be used is a clear error when given, and a bad path is refused before start', async () => {
    const missing = join(dir.path, 'no-such-folder', 'control.sock')
    const r = await serveOnce(missing)
    assert.equal(r.code, 1)
    assert.match(
      r.stderr,
      new RegExp(
        `control socket ${missing.replace(/[.]/g, '\\.')}: its folder .*no-such-folder does not exist \\(--control-socket "" turns it off\\)`,
      ),
    )
    // A path naming a file that is not a socket (a typo): refused, and the file left as it was.
    const notSocket = join(dir.path, 'edgegate.db')
    const before = readFileSync(notSocket)
    const onFile = await serveOnce(notSocket)
    assert.equal(onFile.code, 1)
    assert.match(
      onFile.stderr,
      /control socket .*edgegate\.db: a file that is not a socket is there; it was left as it is/,
    )
    assert.deepEqual(readFileSync(notSocket), before)
    const relative = await cli(['status', '--database', database, '--control-socket', 'control.sock'])
    assert.equal(relative.code, 1)
    assert.match(relative.stderr, /--control-socket: must be an absolute path, got "control\.sock"/)
    const long = await cli(['status', '--database', database, '--control-socket', `/${'x'.repeat(120)}`])
    assert.equal(long.code, 1)
    assert.match(long.stderr, /--control-socket: must be at most 100 bytes long/)
  })
})
