/**
 * The detection thresholds (see detect.ts), apart from the detection itself: the config
 * schema needs their defaults in every command, `--help` included, and detect.ts loads
 * `node:crypto` (about 10 ms of start-up, #22).
 */
export interface Thresholds {
  minSuspiciousHits: number
  minRequests: number
  minDistinctPaths: number
  minErrorRatio: number
}

export const DEFAULT_THRESHOLDS: Thresholds = {
  minSuspiciousHits: 3,
  minRequests: 10,
  minDistinctPaths: 10,
  minErrorRatio: 0.6,
}
