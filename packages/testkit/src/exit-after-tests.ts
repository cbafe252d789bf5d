/**
 * Loaded into every test file's process by `npm test` (`--import`), instead of Node's
 * `--test-force-exit`. That flag exits a file's process as soon as its tests end, before the
 * runner has read the last results from the pipe, so the report silently lost the tail of a
 * file: 27 to 60 of net.test.ts's 60 tests, a total that varied between full runs, and a failing
 * test seen only as "test failed" at the file's line 1 (nodejs/node#64833).
 *
 * Here a file's process exits by itself once nothing holds it. If something still does (a
 * server a failed test never stopped), it is named on stderr and the process exits 30 s after
 * the file's last root-level hook began, keeping its exit code: the runner has long read every
 * result by then, and testkit's exit hook stops the servers it started.
 */
import { after } from 'node:test'

// GATEHOUSE_TEST_EXIT_GRACE_MS: for this module's own test.
const GRACE_MS = Number(process.env.GATEHOUSE_TEST_EXIT_GRACE_MS ?? 30_000)

after(() => {
  setTimeout(() => {
    const held = process.getActiveResourcesInfo()
    process.stderr.write(
      `${process.argv[1]}: still running ${GRACE_MS / 1000} s after its tests (held by ${[...new Set(held)].join(', ')}); exiting\n`,
    )
    process.exit()
  }, GRACE_MS).unref()
})
