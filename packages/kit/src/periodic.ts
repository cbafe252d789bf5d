/**
 * A background job that runs every so often: retention sweeps, expiry sweeps, health passes.
 * Each had its own timer code, and the copies differed where it matters on a bad day: one let
 * two runs overlap when a run outlasted the interval, one did not wait for a running pass on
 * close (the database then closed under it). Here a run never overlaps another (a call while
 * one runs joins it), a failure is reported and the job goes on, the timers never keep the
 * process alive, and `stop()` ends the timers and then waits for the run in progress.
 */

import type { AppMetrics, Counter, Gauge } from './metrics.ts'

export interface PeriodicOptions {
  /** Between runs. */
  intervalMs: number
  /** Before the first run: 0 runs it at once. Default: `intervalMs`. */
  firstRunMs?: number
  /** A run that threw or rejected; the job runs again at the next interval. */
  onError(err: unknown): void
  /** A run that ended well (with `onError`, a `RepeatedFailure`'s two halves). */
  onSuccess?(): void
  /**
   * Export the job's runs as `<app>_job_last_success_timestamp_seconds{job}`,
   * `<app>_job_duration_seconds{job}` (the last run) and `<app>_job_failures_total{job}`:
   * a job that stopped succeeding is an alert (`time() - …last_success… > 3 * interval`),
   * not a log line nobody reads.
   */
  metrics?: { app: JobMetricsHost; job: string }
}

type JobMetricsHost = Pick<AppMetrics, 'gauge' | 'counter'>

interface JobMetrics {
  lastSuccess: Gauge<'job'>
  duration: Gauge<'job'>
  failures: Counter<'job'>
}

// One set per registry: every job of an app shares the three metrics, by its `job` label.
const jobMetrics = new WeakMap<JobMetricsHost, JobMetrics>()

function metricsOf(app: JobMetricsHost): JobMetrics {
  let m = jobMetrics.get(app)
  if (m === undefined) {
    m = {
      lastSuccess: app.gauge('job_last_success_timestamp_seconds', 'Unix time a background job last ended well', [
        'job',
      ]),
      duration: app.gauge('job_duration_seconds', "How long a background job's last run took", ['job']),
      failures: app.counter('job_failures_total', 'Runs of a background job that failed', ['job']),
    }
    jobMetrics.set(app, m)
  }
  return m
}

export interface PeriodicJob {
  /** Run now (tests, an operator's request); a run in progress is joined instead. After `stop()`, nothing runs. */
  run(): Promise<void>
  /** No more runs; resolves when the run in progress, if any, has ended. */
  stop(): Promise<void>
}

/**
 * Run `task` after `firstRunMs`, then every `intervalMs`.
 *
 * @example const sweep = periodic(() => expireDecisions(db), { intervalMs: 10_000, firstRunMs: 0, onError: (err) => log.warn({ err }, 'sweep failed') })
 */
export function periodic(task: () => Promise<unknown>, o: PeriodicOptions): PeriodicJob {
  let running: Promise<void> | undefined
  let stopped = false
  const m = o.metrics ? metricsOf(o.metrics.app) : undefined
  const job = { job: o.metrics?.job ?? '' }
  if (m) m.failures.inc(job, 0) // the series exists from the start: rate() and absent() work
  let started = 0
  let timer: NodeJS.Timeout | undefined
  const run = (): Promise<void> => {
    if (stopped) return running ?? Promise.resolve()
    // Settled a turn later at the earliest, so `running` is cleared after it is set, even when
    // `task` throws at once.
    running ??= Promise.resolve()
      .then(() => {
        started = performance.now()
        return task()
      })
      .then(
        () => {
          m?.duration.set(job, (performance.now() - started) / 1000)
          m?.lastSuccess.set(job, Date.now() / 1000)
          o.onSuccess?.()
        },
        (err: unknown) => {
          m?.duration.set(job, (performance.now() - started) / 1000)
          m?.failures.inc(job)
          o.onError(err)
        },
      )
      .finally(() => {
        running = undefined
      })
    return running
  }
  const repeat = () => {
    void run()
    timer = setInterval(run, o.intervalMs).unref()
  }
  const first = o.firstRunMs ?? o.intervalMs
  // With no delay the first run starts now, not on a timer a turn later.
  const firstTimer = first === 0 ? undefined : setTimeout(repeat, first).unref()
  if (first === 0) repeat()
  return {
    run,
    async stop() {
      stopped = true
      clearTimeout(firstTimer)
      clearInterval(timer)
      await running
    },
  }
}
