import type { Migration } from 'kysely'
import { init } from './0001_init.ts'
import { historyGzip } from './0002_history_gzip.ts'
import { metricPoints } from './0003_metric_points.ts'
import { haAndProvider } from './0004_ha_and_provider.ts'

export const migrations: Record<string, Migration> = {
  '0001_init': init,
  '0002_history_gzip': historyGzip,
  '0003_metric_points': metricPoints,
  '0004_ha_and_provider': haAndProvider,
}
