/** Reads into a reused buffer are the kit's (packages/kit/src/reused-reads.ts), shared with tlsgate. */
export { type ChunkSink, ReusedReads } from '@gatehouse/kit/reused-reads.ts'
