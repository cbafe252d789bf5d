/**
 * The test step of `npm test`: every workspace's `test/**\/*.test.ts` in one `node --test`
 * run, so the output ends with one summary for the whole repository, then the slowest files
 * (`test-times.ts`).
 */
import { spawnSync } from 'node:child_process'
import { globSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..')
const files = globSync(['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'test/**/*.test.ts'], {
  cwd: root,
}).sort()
if (files.length === 0) {
  process.stderr.write('npm test: no test files found\n')
  process.exit(1)
}
// Suites mostly wait on real servers; a little parallelism beyond the two cores pays off.
const concurrency = process.env.GATEHOUSE_TEST_CONCURRENCY ?? '3'
const args = [
  '--test',
  `--test-concurrency=${concurrency}`,
  '--test-timeout=300000',
  '--test-reporter=spec',
  '--test-reporter-destination=stdout',
  `--test-reporter=${join(root, 'scripts', 'test-times.ts')}`,
  '--test-reporter-destination=stdout',
  // Not --test-force-exit: it drops the last results of a file (see this module).
  '--import',
  join(root, 'packages', 'testkit', 'src', 'exit-after-tests.ts'),
  ...process.argv.slice(2),
  ...files,
]
const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' })
process.exit(result.status ?? 1)
