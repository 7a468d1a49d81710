// Command relock inspects the locks, rwlocks and semaphores that relock
// (and Redisson, whose key layout relock shares) keep in Redis.
//
//	relock [flags] ls [pattern]                 locks, rwlocks, semaphores: holders, counts, TTLs, fencing tokens
//	relock [flags] show NAME                    one of them, with every key it has (labels and latches too)
//	relock [flags] leaks [pattern]              keys without TTL, holders of dead owners, orphaned keys
//	relock [flags] unlock --force [--yes] NAME  release NAME whoever holds it; waiters are woken
//	relock [flags] doctor [--sentinel addr,... --master name] [--skew 500ms] [--acl-user user] [--name lockname]
//	                                            check a server, Sentinel set or cluster against relock's guarantees
//
// Flags, before or after the command: --addr host:port (comma-separated
// seeds with --cluster; default $REDIS_URL, parsed by go-redis, else
// 127.0.0.1:6379), --cluster (a Redis Cluster: every master is scanned;
// --cluster=a,b names the seeds),
// --json (a stable JSON document for scripts instead of the table),
// --timeout (default 10s). Keys are listed with SCAN, never KEYS. The
// tables show a name, key, id or label in Go's %q form when it holds a
// character that is not printable, a space, a quote or a backslash, so
// that no name reaches the terminal as escape codes or splits a row;
// --json keeps them exact. unlock
// asks for confirmation on a terminal unless --yes, and refuses to run
// without --yes when stdin is not a terminal (a pipe, or the /dev/null of
// cron, systemd and `ssh host cmd`). Exit status: 0 ok, 1 error,
// 2 usage, 3 when leaks found some.
//
// doctor checks one server (--addr), the master a Sentinel set names and
// its replicas (--sentinel with --master; REDIS_URL, when set, gives their
// user and password), or every master of a cluster (--cluster, the seeds
// in --addr or as --cluster=a,b): the eviction policy (any policy that can
// evict relock's keys while maxmemory is set is an error: they all have
// TTLs, so volatile-* takes them first), used_memory against maxmemory (a
// warning from 90%: under noeviction a full server refuses the writes
// that need memory, so new acquisitions fail with an OOM error while
// holds already granted are renewed and released), persistence (none,
// RDB, AOF and its fsync), replicas and min-replicas-to-write, the ACL each primitive
// needs (ACL DRYRUN for the connection's user or --acl-user, tried on the
// keys and channels of the lock --name; without DRYRUN, read commands
// that change nothing), the server's clock against this machine's
// (--skew, default 500ms), and the version and mode. Each finding is
// printed with its severity (ok, info, warn, error) and its fix; --json
// prints them as a document {"worst": ..., "findings": [...]}. A setting
// that cannot be read is reported so, never taken as fine. doctor's exit
// status is the worst severity: 0 ok or info, 1 warn, 2 error (a server
// that cannot be reached is an error); a bad command line exits 64
// (EX_USAGE), since 2 already means an error found.
//
// The command line is parsed with the standard flag package, one FlagSet
// per subcommand: five subcommands and a dozen flags do not need a CLI
// framework, and relock's go.mod stays as small as the library's users
// expect (a CLI library would become a dependency of every importer's
// module graph). Flags may follow the arguments. The work is done by
// cmd/relock/internal/inspect (reading and force-unlocking),
// cmd/relock/internal/doctor (the checks) and cmd/relock/internal/cli
// (commands and output), which are tested against
// a real redis-server and cluster with golden outputs.
package main
