"""The Lua scripts shared mode runs in Redis: each one atomic step on a page's keys and channels
(docs/scaling.md names the keys and how long each lives)."""

# An event for a page: numbered per page, kept (an invocation until its call ends, other events in a
# capped stream), and published to whichever process streams that page. 0: the page is gone.
# The envelope names the process that pushed it: for an invocation, the one whose agent waits.
# KEYS: page, its invocations, its other events, the call, the page's event channel.
# ARGV: type, call_id, message, this process, ttl (ms), sid, other events kept; and for the cancel of a
# call whose agent's process stopped: that process, its heartbeat key (also its channel), and what to
# tell it should it live after all. That cancel is pushed only while the call is still that process's
# and its heartbeat is gone, so of the processes that notice, one pushes it.
PUSH = """
if ARGV[8] and (redis.call('HGET', KEYS[4], 'owner') ~= ARGV[8] or redis.call('EXISTS', ARGV[9]) == 1) then
  return 0
end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HEXISTS', KEYS[1], 'events') == 0 then
  -- Numbering starts at the time in microseconds, so a Redis that lost its data (and the page
  -- record written back) never numbers an event below one a page has already seen.
  local now = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'events', now[1] .. string.sub('000000' .. now[2], -6))
end
local n = string.format('%.0f', redis.call('HINCRBY', KEYS[1], 'events', 1))  -- all digits, no 1.7e+15
local event = '{"id":' .. n .. ',"owner":"' .. ARGV[4] .. '","data":' .. ARGV[3] .. '}'
if ARGV[1] == 'agui.tool.invoke' then
  redis.call('HSET', KEYS[2], ARGV[2], event)
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  redis.call('HSET', KEYS[4], 'owner', ARGV[4], 'sid', ARGV[6])
  redis.call('PEXPIRE', KEYS[4], ARGV[5])
else
  if ARGV[2] ~= '' then  -- a cancel ends its call here and now, so a late answer is refused
    redis.call('HDEL', KEYS[2], ARGV[2])
    redis.call('DEL', KEYS[4])
  end
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[7], n .. '-0', 'e', event)
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
end
redis.call('PUBLISH', KEYS[5], event)
if ARGV[8] then  -- no one else will end that call
  redis.call('PUBLISH', KEYS[5], '{"settled":"' .. ARGV[2] .. '"}')
  redis.call('PUBLISH', ARGV[9], ARGV[10])
end
return 1
"""
# A call ended: its invocation is never delivered again, and the page's stream forgets it.
SETTLE = """
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', KEYS[3], '{"settled":"' .. ARGV[1] .. '"}')
"""
# A page's answer (ARGV[3] = 1) or progress for a call: only the page it was asked of, only
# while the call waits; an answer claims it, so a second answer finds nothing.
# An answer also ends the call for the page's stream, as SETTLE would (one round trip less a call).
# KEYS: the call, the page's invocations, its event channel; ARGV: sid, message, claim, prefix, call_id.
REPLY = """
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner or redis.call('HGET', KEYS[1], 'sid') ~= ARGV[1] then return 0 end
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[1])
  redis.call('HDEL', KEYS[2], ARGV[5])
  redis.call('PUBLISH', KEYS[3], '{"settled":"' .. ARGV[5] .. '"}')
end
redis.call('PUBLISH', ARGV[4] .. 'proc:' .. owner, ARGV[2])
return 1
"""
# Forget a page, unless a living process other than this one holds it now (it came back there).
FORGET = """
local holder = redis.call('HGET', KEYS[1], 'holder')
if holder and holder ~= ARGV[1] and redis.call('EXISTS', ARGV[3] .. 'proc:' .. holder) == 1 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[2])
return 1
"""
