import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { dropbearClient, readIdentification, sshClient, startSshd } from '../src/index.ts'

test('startSshd accepts the test key from OpenSSH and Dropbear clients, restarts with a new banner, stops', async () => {
  const sshd = await startSshd()
  after(() => sshd.stop())
  const banner = await sshd.identification()
  assert.match(banner, /^SSH-2\.0-OpenSSH_/)

  const viaOpenssh = await sshClient({ port: sshd.port, key: sshd.key, command: 'echo hello-openssh' })
  assert.equal(viaOpenssh.code, 0, viaOpenssh.stderr)
  assert.equal(viaOpenssh.stdout.trim(), 'hello-openssh')

  const viaDropbear = await dropbearClient({ port: sshd.port, key: sshd.key, command: 'echo hello-dropbear' })
  assert.equal(viaDropbear.code, 0, viaDropbear.stderr)
  assert.equal(viaDropbear.stdout.trim(), 'hello-dropbear')

  await sshd.restart({ versionAddendum: 'gatehouse-test' })
  assert.equal(await readIdentification(sshd.port), `${banner} gatehouse-test`)

  await sshd.stop()
  const refused = await sshClient({ port: sshd.port, key: sshd.key })
  assert.notEqual(refused.code, 0)
})
