// Command chaos is a Jepsen-style run of relock's primitives under a seeded
// schedule of faults, with a self-contained HTML report.
//
// `go run ./chaos -seed N -duration D -out DIR` (from tools/) starts its own
// Redis topologies on free loopback ports (a master with a replica and three
// Sentinels; five independent masters for the Redlock; a three-master
// cluster with a replica each), a toxiproxy proxy between every client
// process and every data server (Sentinels are reached directly), and
// client processes (this binary re-executed with the `worker` subcommand)
// that loop over every primitive and record each operation as a JSON line
// with wall-clock times. A nemesis runs a schedule of faults drawn from the
// seed and the flags alone (one seed is one schedule; -dry-run prints it
// and starts nothing): servers paused, killed and restarted, failovers,
// partitions and latency, CLIENT PAUSE, busy scripts, client processes
// paused past their lease or killed, a server's clock stepped through an
// LD_PRELOAD shim. When the run ends, checkers read the history: mutual
// exclusion (with fencing tokens), semaphore bound, readers against
// writers, one leader at a time, token monotonicity, liveness once the
// faults stop, and a keyspace left with no key without a TTL. Each anomaly
// is classified as a violation or as expected under a stated limit of the
// library (a failover with replica sync off, a server killed without AOF,
// a clock step, a holder paused past its lease; fencing alone explains
// no overlap), and
// attributed to the fault windows it overlaps. The verdicts go to
// results.json and, with timelines and latency charts drawn as inline SVG,
// to report.html.
//
// The run is bounded: it stops by itself after the duration plus a short
// drain, and kills every child process (each in its own process group) on
// the way out, on SIGINT and SIGTERM too.
package main
