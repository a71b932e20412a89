"""The Lua scripts shared mode runs in Redis: each one atomic step on a page's keys and channels
(docs/scaling.md names the keys and how long each lives)."""

# An event for a page: numbered per page, kept (an invocation until its call ends, other events in a
# capped stream), and published to whichever process streams that page. 0: the page is gone.
# The envelope names the process that pushed it: for an invocation, the one whose agent waits.
# KEYS: page, its invocations, its other events, the call, the page's event channel; for a surviving
# program's invocation, also its program and the calls it sent.
# ARGV: type, call_id, message, this process, ttl (ms), sid, other events kept, prefix, and a mode:
# - 'stopped', the cancel of a call whose agent's process stopped; then that process, what to tell it
#   should it live after all, and '1' to keep a surviving program's call (its program waits for a process
#   to go on with it, and has not ended: 2). Pushed only while the call is still that process's (else -1, or the call's
#   owner now, another process having taken it over) and its heartbeat is gone (else 0), so of the
#   processes that notice, one pushes it.
# - 'program', the invocation of a surviving program's call; then its run id and the sandbox's id of the
#   call. Sent only while that program is this process's (else -2: another took it over; a program Redis
#   lost with its data is this process's again), and marked as the program's in the same step (the call
#   names its run; the program's sent calls name the call).
# - '' for any other event.
PUSH = """
local mode = ARGV[9]
if mode == 'stopped' then
  local owner = redis.call('HGET', KEYS[4], 'owner')
  if not owner then return -1 end
  if owner ~= ARGV[10] then return owner end
  if redis.call('EXISTS', ARGV[8] .. 'proc:' .. owner) == 1 then return 0 end
  local run = redis.call('HGET', KEYS[4], 'run')
  if run and ARGV[12] == '1' then
    local program = ARGV[8] .. 'program:' .. run
    if redis.call('EXISTS', program) == 1 and redis.call('HEXISTS', program, 'ended') == 0 then return 2 end
  end
elseif mode == 'program' then
  local holder = redis.call('HGET', KEYS[6], 'process')
  if not holder then
    redis.call('HSET', KEYS[6], 'process', ARGV[4])
    redis.call('PEXPIRE', KEYS[6], ARGV[5])
    redis.call('HSET', ARGV[8] .. 'programs', ARGV[10], ARGV[4])
  elseif holder ~= ARGV[4] then
    return -2
  end
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
  if mode == 'program' then
    redis.call('HSET', KEYS[4], 'run', ARGV[10])
    redis.call('HSET', KEYS[7], ARGV[11], '{"call":"' .. ARGV[2] .. '","sid":"' .. ARGV[6] .. '"}')
    local ttl = redis.call('PTTL', KEYS[6])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[7], ttl) end
  end
else
  if ARGV[2] ~= '' then  -- a cancel ends its call here and now, so a late answer is refused
    redis.call('HDEL', KEYS[2], ARGV[2])
    redis.call('DEL', KEYS[4])
  end
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[7], n .. '-0', 'e', event)
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
end
redis.call('PUBLISH', KEYS[5], event)
if mode == 'stopped' then  -- no one else will end that call
  redis.call('PUBLISH', KEYS[5], '{"settled":"' .. ARGV[2] .. '"}')
  redis.call('PUBLISH', ARGV[8] .. 'proc:' .. ARGV[10], ARGV[11])
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
# Take over a surviving program's call that still waits at its page, its process having stopped: the page's
# answer comes to this process from now on (only while the program is this process's), and the call's
# previous process, should it live after all, is told why the call ended there.
# KEYS: the call, the program; ARGV: this process, run id, prefix, what to tell the previous process.
ADOPT_CALL = """
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[2] or redis.call('HGET', KEYS[2], 'process') ~= ARGV[1] then
  return 0
end
local owner = redis.call('HGET', KEYS[1], 'owner')
redis.call('HSET', KEYS[1], 'owner', ARGV[1])
if owner and owner ~= ARGV[1] then redis.call('PUBLISH', ARGV[3] .. 'proc:' .. owner, ARGV[4]) end
return 1
"""
# Claim a surviving program whose process stopped: one process wins. {0}: no such program, or it ended
# (its index entry goes); {1}: a living process holds it; {2, the process it had, its sealed record, the seal, the
# calls it sent (field, value, ...)}.
# KEYS: the program, the calls it sent, the index of programs; ARGV: run id, this process, prefix.
CLAIM_PROGRAM = """
local holder = redis.call('HGET', KEYS[1], 'process')
if not holder or redis.call('HEXISTS', KEYS[1], 'ended') == 1 then
  redis.call('HDEL', KEYS[3], ARGV[1])
  return {0}
end
if holder == ARGV[2] or redis.call('EXISTS', ARGV[3] .. 'proc:' .. holder) == 1 then return {1} end
redis.call('HSET', KEYS[1], 'process', ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
local record = redis.call('HMGET', KEYS[1], 'record', 'seal')
return {2, holder, record[1] or '', record[2] or '', redis.call('HGETALL', KEYS[2])}
"""
# A surviving program's record, written only while the program is this process's (one Redis lost with
# its data is this process's again).
# KEYS: the program, the index of programs; ARGV: this process, the sealed record, its seal, ttl (ms), run id.
WRITE_PROGRAM = """
local holder = redis.call('HGET', KEYS[1], 'process')
if holder and holder ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'process', ARGV[1], 'record', ARGV[2], 'seal', ARGV[3])
if not holder then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('HSET', KEYS[2], ARGV[5], ARGV[1])
end
return 1
"""
# A surviving program's run is over, only while it is this process's: its record, marks and index entry
# go; the program stays, marked ended, until it expires, so that a process that lost it (taken for
# stopped while it lived) finds it another's, and sends none of its calls.
# KEYS: the program, the calls it sent, the index of programs; ARGV: this process, run id.
END_PROGRAM = """
if redis.call('HGET', KEYS[1], 'process') ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 'record', 'seal')
redis.call('HSET', KEYS[1], 'ended', '1')
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[3], ARGV[2])
return 1
"""
# A task's record, written by the process running its call, unless a living process other than this one
# runs it now (it went on with the task's program, this one having been taken for stopped).
# KEYS: the task; ARGV: this process, the task as JSON, its time to live left (ms), prefix.
SAVE_TASK = """
local holder = redis.call('HGET', KEYS[1], 'process')
if holder and holder ~= ARGV[1] and redis.call('EXISTS', ARGV[4] .. 'proc:' .. holder) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'process', ARGV[1], 'task', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
