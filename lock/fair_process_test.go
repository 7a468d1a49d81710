package lock_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/history"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// fairProcessEnv, when set, makes the test binary a waiter process
// instead of running the tests (see TestMain): its value is the Redis
// address. The process takes the fair lock "fair", reports on stdout,
// holds it briefly and releases it.
const fairProcessEnv = "RELOCK_FAIR_PROCESS"

// fairProcess is the waiter process: "acquired <token> <unix ns>" then
// "released <unix ns>", or "error <text>".
func fairProcess(addr string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	mu := lock.NewFair(rdb, "fair")
	held, err := mu.Lock(ctx)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	tok, _ := lock.FencingToken(held)
	fmt.Println("acquired", tok, time.Now().UnixNano())
	time.Sleep(20 * time.Millisecond)
	fmt.Println("released", time.Now().UnixNano())
	if err := mu.Unlock(held); err != nil {
		fmt.Println("error", err)
		return 1
	}
	return 0
}

// waiterProcess is a fairProcess started by a test.
type waiterProcess struct {
	cmd   *exec.Cmd
	lines chan string
}

func startWaiterProcess(t *testing.T, addr string) *waiterProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fairProcessEnv+"="+addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	p := &waiterProcess{cmd: cmd, lines: make(chan string, 4)}
	go func() {
		defer close(p.lines)
		s := bufio.NewScanner(out)
		for s.Scan() {
			p.lines <- s.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// hold reads the process's report of its hold.
func (p *waiterProcess) hold(t *testing.T, i int) history.Hold {
	t.Helper()
	read := func() []string {
		select {
		case line, ok := <-p.lines:
			require.True(t, ok, "process %d ended without a report", i)
			f := strings.Fields(line)
			require.NotEqual(t, "error", f[0], "process %d: %s", i, line)
			return f
		case <-time.After(20 * time.Second):
			t.Fatalf("process %d: no report", i)
			return nil
		}
	}
	acq, rel := read(), read()
	tok, _ := strconv.ParseInt(acq[1], 10, 64)
	at, _ := strconv.ParseInt(acq[2], 10, 64)
	until, _ := strconv.ParseInt(rel[1], 10, 64)
	return history.Hold{Lock: "fair", Owner: strconv.Itoa(i), Kind: history.Exclusive, Token: tok, HasToken: true,
		Acquired: time.Unix(0, at), Released: time.Unix(0, until)}
}

// Five OS processes queued one after another take the lock in that order;
// one SIGKILLed while queued delays the rest by no more than its mark
// life, and the others keep their order.
func TestFairProcesses(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "order", true: "killed waiter"}[kill], func(t *testing.T) {
			s := redistest.StartServer(t)
			admin := s.Client(t)
			ctx := ctxT(t)
			holder := lock.NewFair(admin, "fair")
			held, err := holder.Lock(ctx)
			require.NoError(t, err)

			const n = 5
			procs := make([]*waiterProcess, n)
			for i := range procs {
				procs[i] = startWaiterProcess(t, s.Addr)
				awaitQueued(t, ctx, admin, i+1)
			}
			const victim = 1
			if kill {
				require.NoError(t, procs[victim].cmd.Process.Signal(syscall.SIGKILL))
				_ = procs[victim].cmd.Wait()
				require.Len(t, queued(t, ctx, admin), n, "its place is left behind")
			}
			released := time.Now()
			require.NoError(t, holder.Unlock(held))

			hist := history.New()
			var last time.Time
			for i, p := range procs {
				if kill && i == victim {
					continue
				}
				h := p.hold(t, i)
				hist.Add(h)
				require.True(t, h.Acquired.After(last), "process %d served out of order", i)
				if kill && i == victim+1 {
					t.Logf("the waiter behind the killed one took the lock %v after the release before it", h.Acquired.Sub(last))
					require.Less(t, h.Acquired.Sub(last), 5*time.Second)
				}
				if i == 0 {
					t.Logf("the first process took the lock %v after the release", h.Acquired.Sub(released))
				}
				last = h.Acquired
			}
			require.NoError(t, hist.Err())
			require.Empty(t, queued(t, ctx, admin))
			redistest.RequireBoundedKeyspace(t, ctx, admin, time.Hour)
		})
	}
}
