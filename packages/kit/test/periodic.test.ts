import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { createLogger, createMetrics, periodic, RepeatedFailure } from '../src/index.ts'

/** A task whose runs end when the test says so. */
function controlledTask() {
  const runs: Array<() => void> = []
  let active = 0
  let most = 0
  return {
    runs,
    get most() {
      return most
    },
    task: () =>
      new Promise<void>((resolve) => {
        active++
        most = Math.max(most, active)
        runs.push(() => {
          active--
          resolve()
        })
      }),
  }
}

async function until(cond: () => boolean, ms = 5000) {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await delay(5)
  }
}

test('runs at once with firstRunMs 0, then every interval, never two at once', async () => {
  const t = controlledTask()
  const job = periodic(t.task, { intervalMs: 20, firstRunMs: 0, onError: assert.fail })
  await until(() => t.runs.length === 1)
  // Several intervals pass while the first run is still going: none starts beside it.
  await delay(100)
  assert.equal(t.runs.length, 1)
  t.runs[0]!()
  await until(() => t.runs.length === 2)
  t.runs[1]!()
  assert.equal(t.most, 1)
  await job.stop()
})

test('the first run waits firstRunMs (default: the interval)', async () => {
  let runs = 0
  const job = periodic(
    async () => {
      runs++
    },
    { intervalMs: 60_000, onError: assert.fail },
  )
  await delay(50)
  assert.equal(runs, 0, 'nothing runs before the first interval')
  await job.run()
  assert.equal(runs, 1, 'run() runs at once')
  await job.stop()
})

test('run() while a run is going joins it', async () => {
  const t = controlledTask()
  const job = periodic(t.task, { intervalMs: 60_000, onError: assert.fail })
  const a = job.run()
  const b = job.run()
  await until(() => t.runs.length === 1)
  let joinedEnded = false
  void b.then(() => {
    joinedEnded = true
  })
  await delay(10)
  assert.equal(joinedEnded, false)
  t.runs[0]!()
  await Promise.all([a, b])
  assert.equal(t.runs.length, 1)
  await job.stop()
})

test('a failing run is reported and the job goes on, even when the task throws before returning a promise', async () => {
  const errors: unknown[] = []
  let calls = 0
  const job = periodic(
    () => {
      calls++
      if (calls === 1) throw new Error('synchronous')
      if (calls === 2) return Promise.reject(new Error('rejected'))
      return Promise.resolve()
    },
    { intervalMs: 10, firstRunMs: 0, onError: (err) => errors.push(err) },
  )
  await until(() => calls >= 3)
  await job.stop()
  assert.deepEqual(
    errors.slice(0, 2).map((e) => (e as Error).message),
    ['synchronous', 'rejected'],
  )
})

test('stop() waits for the run in progress, and nothing runs after it', async () => {
  const t = controlledTask()
  const job = periodic(t.task, { intervalMs: 10, firstRunMs: 0, onError: assert.fail })
  await until(() => t.runs.length === 1)
  let stopped = false
  const stopping = job.stop().then(() => {
    stopped = true
  })
  await delay(30)
  assert.equal(stopped, false, 'stop() waits for the run')
  t.runs[0]!()
  await stopping
  await job.run()
  await delay(40)
  assert.equal(t.runs.length, 1, 'no run after stop()')
})

test('the timers do not keep the process alive', async () => {
  // A child process with only a job scheduled exits at once.
  const { spawnSync } = await import('node:child_process')
  const script = `import { periodic } from ${JSON.stringify(new URL('../src/periodic.ts', import.meta.url).href)}
periodic(async () => {}, { intervalMs: 3_600_000, firstRunMs: 60_000, onError() {} })`
  // Killed at the timeout (status null) if a timer held it: the first run is a minute away.
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(r.status, 0, r.stderr)
})

test('a job failing run after run logs the first failure, then one line per interval with the count, then one when it works again', async () => {
  const lines: Array<{ level: string; msg: string; repeated?: number; failures?: number; err?: { message: string } }> =
    []
  const sink = new PassThrough().on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line))
  })
  const failures = new RepeatedFailure(createLogger({ name: 'test', level: 'info', destination: sink }), {
    failed: 'sweep failed',
    recovered: 'sweep works again',
    everyMs: 1000,
  })
  let failing = true
  let runs = 0
  let failedRuns = 0
  const job = periodic(
    async () => {
      runs++
      if (!failing) return
      failedRuns++
      throw new Error(`database down (run ${runs})`)
    },
    { intervalMs: 20, firstRunMs: 0, onError: (err) => failures.failed(err), onSuccess: () => failures.succeeded() },
  )
  await until(() => runs >= 4)
  assert.equal(lines.length, 1, 'one line for the first failures')
  assert.deepEqual(
    [lines[0]!.level, lines[0]!.msg, lines[0]!.err?.message],
    ['error', 'sweep failed', 'database down (run 1)'],
  )
  await until(() => lines.length === 2)
  assert.equal(lines[1]!.msg, 'sweep failed')
  assert.ok(lines[1]!.repeated! > 2, 'the second line counts the failures it stands for')
  failing = false
  await until(() => lines.length === 3)
  await delay(100)
  await job.stop()
  assert.equal(lines.length, 3, 'nothing more while it works')
  assert.deepEqual([lines[2]!.level, lines[2]!.msg], ['info', 'sweep works again'])
  assert.equal(lines[2]!.failures, failedRuns)
  // Failing again later starts over: logged at once.
  failures.failed(new Error('down again'))
  await until(() => lines.length === 4)
  assert.equal(lines[3]!.err?.message, 'down again')
})

test('with metrics, each job exports when it last ended well, how long its last run took and its failures', async () => {
  const app = createMetrics('demo')
  let fail = true
  const t = controlledTask()
  const sweep = periodic(
    async () => {
      if (fail) throw new Error('database away')
    },
    { intervalMs: 60_000, onError: () => undefined, metrics: { app, job: 'sweep' } },
  )
  const other = periodic(t.task, { intervalMs: 60_000, onError: assert.fail, metrics: { app, job: 'report' } })
  const values = async (name: string) =>
    Object.fromEntries(
      ((await app.registry.getSingleMetric(`demo_${name}`)?.get())?.values ?? []).map((v) => [v.labels.job, v.value]),
    )
  // Before any run: the failure counters exist at 0, so `rate()` and `absent()` work from the start.
  assert.deepEqual(await values('job_failures_total'), { sweep: 0, report: 0 })
  assert.deepEqual(await values('job_last_success_timestamp_seconds'), {})
  await sweep.run()
  assert.deepEqual(await values('job_failures_total'), { sweep: 1, report: 0 })
  assert.deepEqual(await values('job_last_success_timestamp_seconds'), {})
  fail = false
  const before = Date.now() / 1000
  await sweep.run()
  const ran = other.run()
  await until(() => t.runs.length === 1)
  await delay(30)
  t.runs[0]!()
  await ran
  const last = await values('job_last_success_timestamp_seconds')
  assert.ok(last.sweep! >= before && last.sweep! <= Date.now() / 1000, String(last.sweep))
  assert.ok(last.report! >= last.sweep!)
  const took = await values('job_duration_seconds')
  assert.ok(took.report! >= 0.025 && took.report! < 10, String(took.report))
  assert.deepEqual(await values('job_failures_total'), { sweep: 1, report: 0 })
  await sweep.stop()
  await other.stop()
})
