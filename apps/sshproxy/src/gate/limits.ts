/** Connection admission is the kit's (packages/kit/src/gate-limits.ts), shared with tlsgate. */
export { ConnectionCap, connectionCapWithinLimit, SourceRateLimiter } from '@gatehouse/kit/gate-limits.ts'
