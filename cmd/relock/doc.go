// Command relock inspects the locks, rwlocks and semaphores that relock
// (and Redisson, whose key layout relock shares) keep in Redis.
//
//	relock [flags] ls [pattern]                 locks, rwlocks, semaphores: holders, counts, TTLs, fencing tokens
//	relock [flags] show NAME                    one of them, with every key it has
//	relock [flags] leaks [pattern]              keys without TTL, holders of dead owners, orphaned keys
//	relock [flags] unlock --force [--yes] NAME  release NAME whoever holds it; waiters are woken
//
// Flags, before or after the command: --addr host:port (comma-separated
// seeds with --cluster; default $REDIS_URL, parsed by go-redis, else
// 127.0.0.1:6379), --cluster (a Redis Cluster: every master is scanned),
// --json (a stable JSON document for scripts instead of the table),
// --timeout (default 10s). Keys are listed with SCAN, never KEYS. unlock
// asks for confirmation on a terminal unless --yes, and refuses to run
// without --yes when stdin is not a terminal. Exit status: 0 ok, 1 error,
// 2 usage, 3 when leaks found some.
//
// The command line is parsed with the standard flag package, one FlagSet
// per subcommand: four subcommands and five flags do not need a CLI
// framework, and relock's go.mod stays as small as the library's users
// expect (a CLI library would become a dependency of every importer's
// module graph). Flags may follow the arguments. The work is done by
// cmd/relock/internal/inspect (reading and force-unlocking) and
// cmd/relock/internal/cli (commands and output), which are tested against
// a real redis-server and cluster with golden outputs.
package main
