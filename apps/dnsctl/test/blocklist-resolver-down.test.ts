/**
 * The blocklist rollout with a resolver down: three real kresd processes, one killed with
 * SIGKILL (nothing listens on its address: the kernel answers ICMP port unreachable) and one
 * stopped with SIGSTOP (alive, its socket bound, but not answering: a process busy loading). The
 * killed one must fail at once with a message naming it, the stopped one only after the load
 * timeout, and the instances after them must still get the new list.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Kresd, startKresd, tempDir, waitFor } from '@gatehouse/testkit'
import { refreshOptions } from '../src/blocklists/job.ts'
import { refreshBlocklists } from '../src/blocklists/refresh.ts'
import { BlocklistService } from '../src/blocklists/service.ts'
import { loadDnsctlConfig } from '../src/config.ts'
import { loadedGeneration } from '../src/resolver/rollout.ts'

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')

function runCli(env: Record<string, string>, ...args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'refresh', 'blocklists', ...args],
      { env: { PATH: process.env.PATH, ...env } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('blocklist rollout with a resolver down', () => {
  let kresd: Kresd
  let env: Record<string, string>
  const state = tempDir('dnsctl-resolver-down-')
  const address = (n: number) => `127.0.0.1:${kresd.instances[n]!.port}`
  const generationOf = (n: number) => loadedGeneration({ host: '127.0.0.1', port: kresd.instances[n]!.port })

  before(async () => {
    kresd = await startKresd({ instances: 3 })
    env = {
      DNSCTL_STATE_DIR: state.path,
      DNSCTL_RESOLVER_RPZ_FILES: kresd.instances.map((i) => i.rpzFile).join(','),
      DNSCTL_RESOLVER_ADDRESSES: kresd.instances.map((i) => `127.0.0.1:${i.port}`).join(','),
      // Far longer than the test's own timeout: a dead resolver waited for would fail the test.
      DNSCTL_RESOLVER_LOAD_TIMEOUT: '1h',
    }
    // No sources: the operator's deny list alone makes the compiled list.
    const service = new BlocklistService(loadDnsctlConfig([], env).blocklistDir)
    await service.put({ sources: [], allow: [], deny: ['down.blocked.test'] }, (await service.read()).revision, false)
    await kresd.instances[0]!.child.stop('SIGKILL')
  })
  after(async () => {
    await kresd?.stop()
    state.remove()
  })

  test('a killed kresd fails the refresh at once, named; the others load the list', async () => {
    const run = await runCli(env)
    assert.equal(run.code, 1, run.stderr)
    assert.equal(
      run.stderr,
      `dnsctl: blocklist refresh failed: resolver 1 (${address(0)}) is not running (nothing listens on its address: connection refused)\n`,
    )
    const result = JSON.parse(readFileSync(join(state.path, 'results', 'blocklist-refresh.json'), 'utf8'))
    assert.equal(result.ok, false)
    assert.equal(result.domain_count, 1)
    assert.equal(await generationOf(1), result.generation)
    assert.equal(await generationOf(2), result.generation)
    // The dead instance's file holds the new list for when it is started again.
    assert.match(readFileSync(kresd.instances[0]!.rpzFile, 'utf8'), /^down\.blocked\.test\. CNAME \.$/m)
  })

  test('a live resolver that does not answer gets the whole load timeout; the one after it still loads', async () => {
    const config = loadDnsctlConfig([], { ...env, DNSCTL_RESOLVER_LOAD_TIMEOUT: '2s' })
    const stopped = kresd.instances[1]!.child.process
    stopped.kill('SIGSTOP')
    let report: Awaited<ReturnType<typeof refreshBlocklists>>
    try {
      report = await refreshBlocklists(refreshOptions(config))
    } finally {
      stopped.kill('SIGCONT')
    }
    assert.equal(report.ok, false)
    const problems = report.error!.split('; ')
    assert.equal(problems.length, 2, report.error!)
    assert.match(problems[0]!, new RegExp(`^resolver 1 \\(${address(0)}\\) is not running \\(`))
    assert.match(
      problems[1]!,
      new RegExp(`^resolver 2 \\(${address(1)}\\) did not load the new blocklist within 2000 ms \\(no answer from `),
    )
    assert.equal(await generationOf(2), report.generation)
    // Running again, the stopped instance picks the file up by itself.
    await waitFor('the resumed kresd to load the list', async () => (await generationOf(1)) === report.generation)
  })
})
