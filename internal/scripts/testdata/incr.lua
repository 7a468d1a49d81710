-- Adds ARGV[1] to the counter KEYS[1] and returns the new value.
return redis.call('INCRBY', KEYS[1], ARGV[1])
