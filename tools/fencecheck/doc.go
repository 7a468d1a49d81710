// Package fencecheck proves package fence's guards against real stores:
// SQLite (embedded, pure Go), PostgreSQL (its own server, started by the
// tests), redis-server and the HTTP middleware. Its tests pause a lock
// holder's process past its lease (SIGSTOP) and check that its write is
// refused, check 1,000 random interleavings of writers per guard against
// a model, and benchmark a guarded write against the same write bare.
//
// It lives in the tools module so that the database drivers never enter
// the library's go.mod. `make test` runs it; it needs redis-server and
// PostgreSQL's binaries, which `make test` installs when missing and root.
//
//	cd tools && go test ./fencecheck/
//	cd tools && go test -run '^$' -bench . ./fencecheck/
package fencecheck
