-- Tell whether an acquisition that gave up after a run whose reply was
-- lost had counted, by its acquire latch, and take the latch away, so that
-- the caller gives that count back (with the side's release script) once
-- at most, however often this runs.
--
-- KEYS[1]  the acquire latch, relock_acquire_latch:{<name>}:<request id>
--
-- Returns 1 when the run had counted (the latch was there), 0 otherwise.
return redis.call('del', KEYS[1])
