/**
 * The store's Lua scripts. Each touches keys of one hash tag only (Redis Cluster safe) and is
 * small enough to run in microseconds. Lease scripts check the owner, so a stale instance can
 * never renew or release another's lease.
 */

/**
 * Fold one tick of a bucket's aggregates into their window and return the window totals of
 * those that now cross a detection threshold and were not signalled yet (the rest stay here:
 * a tick's reply is a few numbers, not seven per aggregate).
 * KEYS[1]: the bucket's counters hash, one field per IP holding
 * `requests,errors,successes,non-static,suspicious,signalled`; KEYS[2..]: one distinct-path
 * HyperLogLog per aggregate, in ARGV order. ARGV: ttl ms, then the thresholds (the non-static
 * count from which distinct paths are counted and the error ratio applies, suspicious hits,
 * distinct paths, error ratio), then one packed aggregate per argument:
 * `ip,r,e,s,n,x,pathhash,pathhash,...` (one argument instead of seven plus one per path: the
 * agent's cost of a call is mostly per argument). Returns 7 numbers per candidate: its
 * 1-based position, r, e, s, n, x, distinct paths (-1 when not counted). The rule is
 * detect.ts's isScanner, which the agent applies again to what comes back.
 */
export const FLUSH = `
local ttl = ARGV[1]
local need = tonumber(ARGV[2])
local min_hits = tonumber(ARGV[3])
local min_paths = tonumber(ARGV[4])
local min_ratio = tonumber(ARGV[5])
local out = {}
for k = 2, #KEYS do
  local f = {}
  local nf = 0
  for v in string.gmatch(ARGV[k + 4], '[^,]+') do
    nf = nf + 1
    f[nf] = v
  end
  local ip = f[1]
  local c = {0, 0, 0, 0, 0, 0}
  local old = redis.call('HGET', KEYS[1], ip)
  if old then
    local j = 1
    for v in string.gmatch(old, '[^,]+') do
      c[j] = tonumber(v)
      j = j + 1
    end
  end
  for j = 1, 5 do c[j] = c[j] + tonumber(f[j + 1]) end
  redis.call('HSET', KEYS[1], ip, table.concat(c, ','))
  if nf > 6 then
    redis.call('PFADD', KEYS[k], unpack(f, 7, nf))
    redis.call('PEXPIRE', KEYS[k], ttl)
  end
  if c[6] == 0 then
    local d = -1
    if c[4] >= need then d = redis.call('PFCOUNT', KEYS[k]) end
    if c[5] >= min_hits or (c[4] >= need and d >= min_paths and c[2] / c[4] >= min_ratio) then
      out[#out + 1] = k - 1
      out[#out + 1] = c[1]
      out[#out + 1] = c[2]
      out[#out + 1] = c[3]
      out[#out + 1] = c[4]
      out[#out + 1] = c[5]
      out[#out + 1] = d
    end
  end
end
redis.call('PEXPIRE', KEYS[1], ttl)
return out
`

/** Mark an aggregate signalled. KEYS: the bucket hash. ARGV: ip. */
export const MARK = `
local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], (string.gsub(old, '[^,]+$', '1')))
return 1
`

/**
 * Acquire (or keep) the publisher lease. KEYS: lease hash, epoch. ARGV: owner, ttl ms.
 * A new acquisition sets epoch = max(stored + 1, TIME in ms): it rises even after a failover
 * to a replica that lagged (a plain INCR could hand out the same epoch twice there).
 * Returns the epoch, or 0 when another owner holds the lease.
 */
export const ACQUIRE = `
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(redis.call('HGET', KEYS[1], 'epoch'))
end
if owner then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stored = tonumber(redis.call('GET', KEYS[2]) or '0')
local epoch = math.max(stored + 1, now)
redis.call('SET', KEYS[2], epoch)
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'epoch', epoch)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return epoch
`

/** Renew: KEYS: lease. ARGV: owner, epoch, ttl ms. 1 when still ours, else 0. */
export const RENEW = `
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] and redis.call('HGET', KEYS[1], 'epoch') == ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0
`

/** Release: KEYS: lease. ARGV: owner, epoch. 1 when it was ours and is now free. */
export const RELEASE = `
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] and redis.call('HGET', KEYS[1], 'epoch') == ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`

/**
 * Add to a bounded outbox unless already queued or recently acknowledged.
 * KEYS: outbox zset, data hash, sent zset. ARGV: id, payload, max depth, score (ms).
 * Past the bound the oldest entries are dropped. Returns {added, dropped}.
 */
export const ENQUEUE = `
if redis.call('ZSCORE', KEYS[3], ARGV[1]) or redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {0, 0} end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
local dropped = 0
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #old, 2 do
    redis.call('HDEL', KEYS[2], old[i])
    dropped = dropped + 1
  end
end
return {1, dropped}
`

/**
 * Acknowledge delivered entries. KEYS: outbox zset, data hash, sent zset. ARGV: now ms,
 * remember ms, ids... The sent set keeps ids for a while so a later re-trigger in the same
 * window is not queued again; old ids are trimmed here.
 */
export const ACK = `
local keep_until = tonumber(ARGV[1]) + tonumber(ARGV[2])
for i = 3, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('ZADD', KEYS[3], keep_until, ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
return #ARGV - 2
`

/**
 * Fold one tick of an hour's analytics. KEYS: counters hash, visitors HyperLogLog, paths zset
 * (one hash tag). ARGV: ttl ms, requests, 1xx..5xx, bots, visitor count, visitors..., then
 * path/count pairs.
 */
export const ANALYTICS_FLUSH = `
local ttl = ARGV[1]
redis.call('HINCRBY', KEYS[1], 'r', ARGV[2])
for j = 1, 5 do redis.call('HINCRBY', KEYS[1], 's' .. j, ARGV[2 + j]) end
redis.call('HINCRBY', KEYS[1], 'b', ARGV[8])
local nv = tonumber(ARGV[9])
if nv > 0 then redis.call('PFADD', KEYS[2], unpack(ARGV, 10, 9 + nv)) end
local i = 10 + nv
while i < #ARGV do
  redis.call('ZINCRBY', KEYS[3], ARGV[i + 1], ARGV[i])
  i = i + 2
end
for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ttl) end
return 1
`
