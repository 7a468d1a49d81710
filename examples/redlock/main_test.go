package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// go-redis probes a server it cannot dial from a goroutine that notices the
// client was closed only after its next 1 s sleep: the killed masters leave
// such probes behind for up to a second.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

func TestRedlock(t *testing.T) {
	t.Setenv("REDIS_ADDRS", "") // the scenario kills masters: embedded ones only
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)
	want := []string{
		"acquired (quorum 3 of 5); masters: held held held held held",
		"-- master 3 killed",
		// The hold outlives its 1.5 s lease on the 4 masters left...
		"2 s later: hold alive = true; masters: held held down held held",
		"while it is held, another owner's TryLock: not acquired = true",
		"Unlock: <nil> (a quorum released)",
		// ...a new owner still gets the lock with 4 of 5 up...
		"a new owner acquired it with 4 masters up; masters: held held down held held",
		"-- master 4 killed\n-- master 5 killed",
		// ...and loses it, told through its context, once the quorum is gone.
		"the hold ended: ErrLockLost = true",
		"Unlock reports the loss: true",
		"survivors given back; masters: free free down down down",
		"with 2 masters up, another owner's TryLock: not acquired = true",
	}
	rest := got
	for _, w := range want { // in this order
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks, in order, %q", w)
		}
		rest = rest[i+len(w):]
	}
}
