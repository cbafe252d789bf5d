/** Reads into a reused buffer are the kit's (packages/kit/src/gate-reads.ts), shared with tlsgate. */
export { type ChunkSink, ReusedReads } from '@gatehouse/kit/gate-reads.ts'
