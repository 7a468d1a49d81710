package conn

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/redis/go-redis/v9"
)

// shared is everything conn keeps for one Redis client, made at the first
// meeting and dropped with the client: the one per-client registry. Its
// values hold the client only through a Ref.
type shared struct {
	pipe *Pipe
	pool *Pool
	ps   *PubSub
	// twin is held weakly: its pool refers to the client (twin.go).
	twinOnce sync.Once
	twin     weak.Pointer[twin]
	twinMade atomic.Bool
	above    sync.Map // *PerClient[V] -> V: what the layers above keep
}

var clients Map[*shared]

// sharedOf returns c's entry: the one Of found, else looked up.
func sharedOf(c Client) *shared {
	if c.sh != nil {
		return c.sh
	}
	return clients.Get(c, newShared)
}

// newShared makes a client's entry; it starts nothing, so a copy made by
// a lost race costs only its memory.
func newShared(c Client) *shared {
	s := &shared{pipe: newPipe(c), pool: newPool(c), ps: newPubSub(c)}
	s.pipe.sh = s
	return s
}

// PerClient is a value per client that a layer above conn keeps (a hub,
// a replica topology), in the client's one entry. Like every value there,
// it must hold the client only through a Ref.
type PerClient[V any] struct{ make func(Client) V }

// NewPerClient returns a PerClient whose values make makes on first use.
func NewPerClient[V any](make func(Client) V) *PerClient[V] { return &PerClient[V]{make: make} }

// For returns c's value (racing first calls may make two; one is kept).
func (s *PerClient[V]) For(c Client) V {
	sh := sharedOf(c)
	if v, ok := sh.above.Load(s); ok {
		return v.(V)
	}
	v, _ := sh.above.LoadOrStore(s, s.make(c))
	return v.(V)
}

// Len is how many live clients have a value of s.
func (s *PerClient[V]) Len() int {
	n := 0
	clients.m.Range(func(_, v any) bool {
		if _, ok := v.(*shared).above.Load(s); ok {
			n++
		}
		return true
	})
	return n
}

// Map holds one V per live Redis client. Its methods are safe for
// concurrent use. A V must not refer to its client but through a Ref, or
// the client would never be collected, nor its entry dropped.
type Map[V any] struct {
	m sync.Map // key (see keyOf) -> V
}

// Get returns client's V, made by newV(client) on first use (racing
// goroutines may run newV more than once; one result is kept). A Client
// made by Of carries its entry, so calls look clients up only at the
// first meeting and at the edges.
func (m *Map[V]) Get(client Client, newV func(Client) V) V {
	k := keyOf(client)
	v, ok := m.m.Load(k)
	if !ok {
		var loaded bool
		v, loaded = m.m.LoadOrStore(k, newV(client))
		if !loaded {
			onCollect(client, func() { m.m.CompareAndDelete(k, v) })
		}
	}
	return v.(V)
}

// Len is how many clients have a V now.
func (m *Map[V]) Len() int {
	n := 0
	m.m.Range(func(any, any) bool { n++; return true })
	return n
}

// Ref leads back to a client without keeping it alive.
type Ref struct {
	get func() redis.UniversalClient
}

// NewRef returns a Ref to client.
func NewRef(client Client) Ref {
	switch c := client.rdb.(type) {
	case *redis.Client:
		return weakRef[redis.Client](c)
	case *redis.ClusterClient:
		return weakRef[redis.ClusterClient](c)
	case *redis.Ring:
		return weakRef[redis.Ring](c)
	}
	return Ref{get: func() redis.UniversalClient { return client.rdb }}
}

func weakRef[T any, P interface {
	*T
	redis.UniversalClient
}](c P) Ref {
	w := weak.Make((*T)(c))
	return Ref{get: func() redis.UniversalClient {
		if v := w.Value(); v != nil {
			return P(v)
		}
		return nil
	}}
}

// Client returns the client, or the zero Client once it was collected.
func (r Ref) Client() Client {
	if rdb := r.get(); rdb != nil {
		return Of(rdb)
	}
	return Client{}
}

// keyOf is a comparable key for client that does not keep it alive: a
// weak.Pointer keeps its identity after collection, so a new client at
// the same address never finds another's entry.
func keyOf(client Client) any {
	switch c := client.rdb.(type) {
	case *redis.Client:
		return weak.Make(c)
	case *redis.ClusterClient:
		return weak.Make(c)
	case *redis.Ring:
		return weak.Make(c)
	}
	return client.rdb
}

// onCollect runs f once client is collected (never for other types).
func onCollect(client Client, f func()) {
	run := func(f func()) { f() }
	switch c := client.rdb.(type) {
	case *redis.Client:
		runtime.AddCleanup(c, run, f)
	case *redis.ClusterClient:
		runtime.AddCleanup(c, run, f)
	case *redis.Ring:
		runtime.AddCleanup(c, run, f)
	}
}

// redis is the client Client returns, unwrapped, for this package's calls.
func (r Ref) redis() redis.UniversalClient { return r.get() }
