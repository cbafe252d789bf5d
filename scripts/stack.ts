/**
 * `npm start`: starts every app that exists (each `apps/<app>/stack.ts`) on embedded
 * defaults under `./.gatehouse/`, prints URLs and generated credentials, and stops them
 * all cleanly on Ctrl-C.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { StackService, StartStack } from '../packages/kit/src/stack.ts'
import { setStackStopping } from '../packages/kit/src/stack-ready.ts'

const root = join(import.meta.dirname, '..')
// GATEHOUSE_HOME and GATEHOUSE_PORT_OFFSET let a test run a second stack beside one in use;
// the bin/<app> launchers read the same GATEHOUSE_HOME to find the config files written here.
const home = process.env.GATEHOUSE_HOME ?? join(root, '.gatehouse')
const portOffset = Number(process.env.GATEHOUSE_PORT_OFFSET ?? 0)
// Order matters where one app points at another (the SSH gate syncs with the control plane).
const ORDER = ['edgegate', 'sshproxy', 'tlsgate', 'websignal', 'artsvc', 'dnsctl', 'notify']

function say(line: string) {
  process.stdout.write(`${line}\n`)
}

async function main() {
  const available = ORDER.filter((app) => existsSync(join(root, 'apps', app, 'stack.ts')))
  const missing = ORDER.filter((app) => !available.includes(app))
  const started: Record<string, StackService> = {}
  const failed: Record<string, string> = {}
  let stopping = false

  const stopAll = async () => {
    for (const app of Object.keys(started).reverse()) {
      try {
        await started[app]!.stop()
        say(`stopped ${app}`)
      } catch (err) {
        say(`${app}: stop failed: ${(err as Error).message}`)
      }
    }
  }
  const onSignal = () => {
    if (stopping) process.exit(1)
    stopping = true
    setStackStopping()
    say('\nstopping (Ctrl-C again to exit at once)')
    stopAll().then(() => process.exit(0))
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  // The terminal closed: stop the stack in order, not leave its services running behind it.
  process.on('SIGHUP', onSignal)

  for (const app of available) {
    if (stopping) break
    const dataDir = join(home, app)
    mkdirSync(dataDir, { recursive: true })
    const mod = (await import(join(root, 'apps', app, 'stack.ts'))) as { startStack: StartStack }
    try {
      started[app] = await mod.startStack({
        root,
        dataDir,
        node: process.execPath,
        log: (line) => say(`[${app}] ${line}`),
        started,
        port: (base) => base + portOffset,
      })
    } catch (err) {
      // One broken app should not take the others down: report it and go on.
      failed[app] = (err as Error).message.split('\n')[0] ?? 'unknown error'
      say(`[${app}] did not start: ${failed[app]}`)
    }
  }

  say('')
  say(`Gatehouse local stack (state in ${home}); run the commands below from ${root}:`)
  // The bin/<app> launchers find the stack's config files through GATEHOUSE_HOME: a shell
  // without it would look in ./.gatehouse (or /etc) and not find this stack.
  if (process.env.GATEHOUSE_HOME !== undefined) say(`  $ cd ${root} && export GATEHOUSE_HOME=${home}`)
  if (available.length === 0) say('  no apps exist yet, so none were started')
  for (const [app, svc] of Object.entries(started)) {
    say(`  ${app}`)
    for (const [what, url] of Object.entries(svc.urls)) say(`    ${what}: ${url}`)
    for (const [what, value] of Object.entries(svc.credentials ?? {})) say(`    ${what}: ${value}`)
    for (const note of svc.notes ?? []) say(`    ${note}`)
  }
  for (const [app, why] of Object.entries(failed)) say(`  ${app}: FAILED to start (${why}); see the lines above`)
  if (missing.length > 0) say(`  not built yet: ${missing.join(', ')}`)
  say('')
  if (Object.keys(started).length === 0) {
    say(available.length === 0 ? 'Nothing to run; exiting.' : 'No app started; exiting.')
    process.exit(available.length === 0 ? 0 : 1)
  }
  say('Press Ctrl-C to stop.')
}

main().catch((err) => {
  process.stderr.write(`npm start: ${(err as Error).stack ?? err}\n`)
  process.exit(1)
})
