// Package cli is the relock command: flag parsing (the standard flag
// package, a FlagSet per subcommand, flags accepted after arguments), the
// Redis client from --addr, --cluster or REDIS_URL, and the table and
// JSON output of ls, show, leaks and unlock --force over package inspect,
// and of doctor over package doctor.
// App carries stdin, stdout, stderr and the environment so that tests run
// the command in-process against real servers and compare its output with
// golden files.
package cli
