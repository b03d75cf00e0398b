"""The breaker's Lua scripts (resilience/breaker.py): every change of a breaker's state is
one of them, one round trip on Redis' own clock, so every worker on every host agrees."""

# KEYS[1] state hash, KEYS[2] calls zset, KEYS[3] failures zset, KEYS[4] event log list.
# The last ARGV is the clock: '' for Redis' own TIME (always, outside tests), or the
# milliseconds a test's clock says (the seam that lets tests move time, not wait).
_PRELUDE = """
local now
if ARGV[#ARGV] ~= '' then
  now = tonumber(ARGV[#ARGV])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function log_event(text)
  redis.call('LPUSH', KEYS[4], now .. ' ' .. text)
  redis.call('LTRIM', KEYS[4], 0, 99)
  redis.call('HINCRBY', KEYS[1], 'transitions', 1)
end
-- An outage runs from the first opening to the close: its reopenings (a probe failed)
-- keep its start, which names it (one alert an outage), and say why it opened.
local function open_circuit(reason, base_ms, max_ms)
  local openings = redis.call('HINCRBY', KEYS[1], 'openings', 1)
  local duration = math.min(base_ms * (2 ^ (openings - 1)), max_ms)
  if openings == 1 then redis.call('HSET', KEYS[1], 'outage_since', now) end
  redis.call('HSET', KEYS[1], 'state', 'open', 'open_until', now + duration,
             'consecutive_failures', 0, 'open_reason', reason)
  redis.call('HDEL', KEYS[1], 'probe_token', 'probe_lease_until')
  redis.call('DEL', KEYS[2], KEYS[3])
  log_event('open ' .. duration .. 'ms: ' .. reason)
  return duration
end
"""

# ARGV: token, probe_lease_ms, window_ms. Returns {verdict, until_ms, needs_record}:
# a success needs recording only while failures are on record (the closed happy path
# then costs one round trip).
ALLOW = (
    _PRELUDE
    + """
local fields = redis.call('HMGET', KEYS[1], 'forced', 'state', 'consecutive_failures')
local forced, state = fields[1], fields[2] or 'closed'
if forced == 'open' then
  redis.call('HINCRBY', KEYS[1], 'rejected', 1)
  return {'reject', -1, 0}
end
if forced == 'closed' then return {'allow', 0, 0} end
if state == 'closed' then
  local failing = tonumber(fields[3] or 0) > 0 or
    redis.call('ZCOUNT', KEYS[3], now - tonumber(ARGV[3]), '+inf') > 0
  return {'allow', 0, failing and 1 or 0}
end
if state == 'open' then
  local open_until = tonumber(redis.call('HGET', KEYS[1], 'open_until') or 0)
  if now < open_until then
    redis.call('HINCRBY', KEYS[1], 'rejected', 1)
    return {'reject', open_until, 0}
  end
  redis.call('HSET', KEYS[1], 'state', 'half_open')
  log_event('half_open')
end
local lease = tonumber(redis.call('HGET', KEYS[1], 'probe_lease_until') or 0)
if now < lease then
  redis.call('HINCRBY', KEYS[1], 'rejected', 1)
  return {'reject', lease, 0}
end
redis.call('HSET', KEYS[1], 'probe_token', ARGV[1], 'probe_lease_until', now + tonumber(ARGV[2]))
redis.call('HINCRBY', KEYS[1], 'probes', 1)
return {'probe', now + tonumber(ARGV[2]), 1}
"""
)

# ARGV: verdict ('1' a failure, '0' a success, 'n' neither: an answer that says nothing of
#       the provider's health now, which only hands the half-open probe on), token ('' if
#       none), window_ms, threshold, min_calls, failure_rate, open_base_ms, open_max_ms,
#       member (unique id of this call), what failed (text)
RECORD = (
    _PRELUDE
    + """
local is_failure = ARGV[1] == '1'
if ARGV[1] == 'n' then
  redis.call('HINCRBY', KEYS[1], 'neutral_total', 1)
  if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'probe_token') == ARGV[2] then
    redis.call('HDEL', KEYS[1], 'probe_token', 'probe_lease_until')  -- the next call probes
    return 'half_open'
  end
  return 'ignored'
end
redis.call('HINCRBY', KEYS[1], is_failure and 'failures_total' or 'successes_total', 1)
if is_failure then redis.call('HSET', KEYS[1], 'last_failure', ARGV[10]) end
if redis.call('HGET', KEYS[1], 'forced') then return 'forced' end
local state = redis.call('HGET', KEYS[1], 'state') or 'closed'
if state == 'half_open' then
  if ARGV[2] == '' or redis.call('HGET', KEYS[1], 'probe_token') ~= ARGV[2] then
    return 'ignored'
  end
  if is_failure then
    open_circuit('probe failed', tonumber(ARGV[7]), tonumber(ARGV[8]))
    return 'open'
  end
  redis.call('HSET', KEYS[1], 'state', 'closed', 'consecutive_failures', 0, 'openings', 0)
  redis.call('HDEL', KEYS[1], 'probe_token', 'probe_lease_until', 'open_until',
             'outage_since', 'open_reason')
  log_event('closed: probe succeeded')
  return 'closed'
end
if state == 'open' then return 'ignored' end
local window_start = now - tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', window_start)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', window_start)
redis.call('ZADD', KEYS[2], now, ARGV[9])
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]))
if not is_failure then
  redis.call('HSET', KEYS[1], 'consecutive_failures', 0)
  return 'closed'
end
redis.call('ZADD', KEYS[3], now, ARGV[9])
redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[3]))
local consecutive = redis.call('HINCRBY', KEYS[1], 'consecutive_failures', 1)
if consecutive >= tonumber(ARGV[4]) then
  open_circuit(consecutive .. ' consecutive failures', tonumber(ARGV[7]), tonumber(ARGV[8]))
  return 'open'
end
local calls = redis.call('ZCARD', KEYS[2])
local failures = redis.call('ZCARD', KEYS[3])
if calls >= tonumber(ARGV[5]) and failures / calls >= tonumber(ARGV[6]) then
  open_circuit(failures .. '/' .. calls .. ' calls failed', tonumber(ARGV[7]), tonumber(ARGV[8]))
  return 'open'
end
return 'closed'
"""
)

# ARGV: action ('open' | 'closed' | 'reset'), audit text
OVERRIDE = (
    _PRELUDE
    + """
redis.call('LPUSH', KEYS[5], now .. ' ' .. ARGV[2])
redis.call('LTRIM', KEYS[5], 0, 99)
if ARGV[1] == 'reset' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  log_event('reset')
  return 'closed'
end
redis.call('HSET', KEYS[1], 'forced', ARGV[1])
log_event('forced ' .. ARGV[1])
return ARGV[1]
"""
)
