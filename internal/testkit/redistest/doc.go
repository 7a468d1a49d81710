// Package redistest holds the test helpers shared by every relock package:
// an embedded miniredis, real redis-server processes on free loopback ports,
// a real three-master Redis Cluster, a stall server that holds back its
// replies to SUBSCRIBE (StallServer), and helpers that inspect server-side
// client state (CLIENT LIST) so tests can assert, for example, that one
// pub/sub connection serves all waiters.
//
// Behaviour suites run against both kinds of server, because miniredis is
// fast and can fast-forward TTLs but is not Redis:
//
//	for _, b := range redistest.Backends() {
//		t.Run(b.Name, func(t *testing.T) {
//			env := b.New(t)
//			// use env.Client; env.FastForward(d) moves TTLs on either backend
//		})
//	}
//
// Helpers that need redis-server call [RequireRedisServer]: when the binary is
// missing the test fails in CI (CI=true) and is skipped, loudly, elsewhere.
// `make test` installs redis-server when it can.
//
// Every process, client and connection a helper opens is closed through
// t.Cleanup, so tests that use go.uber.org/goleak stay clean.
package redistest
