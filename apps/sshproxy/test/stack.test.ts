/**
 * `npm start`'s SSH gate beside the stack's edgegate: the node token goes to a file of its own
 * (owner-only) that config.json names, so the commands an operator runs from a shell
 * (`bin/sshproxy doctor`, `status`) read the same settings serve does, and config.json holds
 * no secret.
 */
import assert from 'node:assert/strict'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { stackHarness } from '@gatehouse/testkit'
import type { StackService } from '../../../packages/kit/src/stack.ts'
import { startStack as startEdgegate } from '../../edgegate/stack.ts'
import { startStack } from '../stack.ts'
import { cli, waitFor } from './helpers.ts'

// Lane 7: ports ending in digits no other stack test's draws give (testkit's stackHarness).
const stack = stackHarness('sshproxy-stack-', 7)
const { home, context: ctx } = stack
const running: StackService[] = []

after(async () => {
  for (const s of running.reverse()) await s.stop()
  stack.remove()
})

test('the demo gate reads its control-plane token from a file config.json names: doctor and status find it as serve does', async () => {
  const edgegate = await startEdgegate(ctx('edgegate', {}))
  running.push(edgegate)
  const gate = await startStack(ctx('sshproxy', { edgegate }))
  running.push(gate)

  const token = JSON.parse(readFileSync(join(home, 'edgegate', 'credentials.json'), 'utf8')).nodeToken as string
  const configPath = join(home, 'sshproxy', 'config.json')
  const configText = readFileSync(configPath, 'utf8')
  assert.ok(!configText.includes(token), 'config.json holds no secret')
  const tokenFile = join(home, 'sshproxy', 'control-plane.token')
  assert.equal(JSON.parse(configText).control_plane.token_file, tokenFile)
  assert.equal(readFileSync(tokenFile, 'utf8').trim(), token)
  assert.equal(statSync(tokenFile).mode & 0o077, 0, 'owner-only')

  // The doctor command the stack prints, run as a shell would (no token in the environment).
  const doctorLine = gate.notes?.find((n) => n.startsWith('$ bin/sshproxy doctor'))
  assert.ok(doctorLine, gate.notes?.join('\n'))
  const args = doctorLine.slice('$ bin/sshproxy '.length).split(' ')
  const env = { SSHPROXY_CONFIG: configPath }
  const doctor = await cli(args, env)
  assert.equal(doctor.code, 0, doctor.stderr)
  assert.match(doctor.stdout, /^control plane: https:\/\/127\.0\.0\.1:\d+ as sshgate-1, auth bearer token/m)

  // serve signs in with the file's token: the policy is pulled.
  await waitFor('a policy pull', async () => {
    const status = await cli(['status'], env)
    return /last policy pull \d{4}-/.test(status.stdout)
  })
})
