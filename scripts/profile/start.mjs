/**
 * Profile a Node process from its first line: `NODE_OPTIONS="--import $PWD/scripts/profile/start.mjs"`
 * with `GATEHOUSE_PROFILE_DIR=<dir>` writes `<dir>/<pid>.cpuprofile` when the process exits.
 * For servers a bench starts as children (Node refuses `--cpu-prof` in NODE_OPTIONS). Only
 * processes whose arguments contain GATEHOUSE_PROFILE_MATCH (default `serve`) are profiled.
 * Plain JavaScript: npm itself (the system Node) loads it too when it runs a bench.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector'
import { join } from 'node:path'

const dir = process.env.GATEHOUSE_PROFILE_DIR
if (dir && process.argv.includes(process.env.GATEHOUSE_PROFILE_MATCH ?? 'serve')) {
  const session = new Session()
  session.connect()
  session.post('Profiler.enable')
  // 200 µs: fine enough to see stretches of a few milliseconds.
  session.post('Profiler.setSamplingInterval', { interval: 200 })
  session.post('Profiler.start')
  process.on('exit', () => {
    // The same-thread session answers synchronously, so the file is written before exit.
    session.post('Profiler.stop', (err, result) => {
      if (err) return
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile))
    })
  })
}
