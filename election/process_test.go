package election_test

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

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

const (
	candidateEnv = "RELOCK_ELECTION_CANDIDATE"
	writerEnv    = "RELOCK_ELECTION_WRITER"
)

// writerProcess leads, then writes every 5 ms while its leading context
// is live, checking it before each write, as a leader with work to do
// would: "write" per write, "lost" when it finds the leadership gone.
func writerProcess(addr string) int {
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	e := election.New(client, "stopped", election.WithWatchdogTimeout(500*time.Millisecond))
	leading, err := e.Campaign(context.Background(), "writer")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	epoch, _ := election.Epoch(leading)
	fmt.Printf("leading %d\n", epoch)
	for {
		if leading.Err() != nil {
			fmt.Printf("lost %d\n", epoch)
			return 0
		}
		fmt.Printf("write %d\n", epoch)
		time.Sleep(5 * time.Millisecond)
	}
}

// candidateProcess runs Run until killed, printing "leading <epoch>" when
// elected.
func candidateProcess(addr string) int {
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	e := election.New(client, "procs", election.WithWatchdogTimeout(time.Second))
	err := e.Run(context.Background(), strconv.Itoa(os.Getpid()), func(leading context.Context) error {
		epoch, _ := election.Epoch(leading)
		fmt.Printf("leading %d\n", epoch)
		<-leading.Done()
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestLeaderProcessKilled: kill -9 of the leading process elects the next
// candidate once the dead leader's lease lapses, and observers see the
// vacancy and the new leader.
func TestLeaderProcessKilled(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	ctx := ctxT(t)
	obsCtx, stopObs := context.WithCancel(ctx)
	defer stopObs()
	changes := election.New(client, "procs", election.WithWatchdogTimeout(time.Second)).Observe(obsCtx)
	require.True(t, (<-changes).Vacant())

	type proc struct {
		cmd     *exec.Cmd
		leading chan int64
	}
	start := func() *proc {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), candidateEnv+"="+srv.Addr)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		p := &proc{cmd: cmd, leading: make(chan int64, 1)}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if ep, ok := strings.CutPrefix(sc.Text(), "leading "); ok {
					n, _ := strconv.ParseInt(ep, 10, 64)
					p.leading <- n
				}
			}
		}()
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return p
	}
	first := start()
	var ep1 int64
	select {
	case ep1 = <-first.leading:
	case <-time.After(10 * time.Second):
		t.Fatal("the first candidate was not elected")
	}
	second := start()
	require.Eventually(t, func() bool {
		n, err := client.LLen(ctx, "redisson_lock_queue:{procs}").Result()
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond, "the second candidate waits in line")

	l := <-changes
	require.Equal(t, ep1, l.Epoch)
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	var ep2 int64
	select {
	case ep2 = <-second.leading:
	case <-time.After(10 * time.Second):
		t.Fatal("the second candidate was not elected after the leader died")
	}
	took := time.Since(killed)
	t.Logf("next leader %v after the kill (lease 1s)", took)
	require.Greater(t, ep2, ep1)
	require.Less(t, took, time.Second+500*time.Millisecond, "within the lease and a little")
	require.True(t, (<-changes).Vacant(), "observers see the vacancy")
	require.Equal(t, ep2, (<-changes).Epoch)
}

// TestStoppedLeaderLearnsItLostBeforeWriting: a leader SIGSTOPped past its
// lease is superseded; when it resumes, its leading context is done
// before its next check lets a write through (at most the one write
// already past its check when it stopped).
func TestStoppedLeaderLearnsItLostBeforeWriting(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	ctx := ctxT(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+srv.Addr)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1<<16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	require.True(t, strings.HasPrefix(<-lines, "leading "))
	require.Equal(t, "write", strings.Fields(<-lines)[0])

	require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(20 * time.Millisecond)
	for len(lines) > 0 { // what it wrote before the stop
		<-lines
	}
	e := election.New(client, "stopped", election.WithWatchdogTimeout(500*time.Millisecond))
	leading, err := e.Campaign(ctx, "successor")
	require.NoError(t, err, "elected once the stopped leader's lease lapsed")
	require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
	writes := 0
	for l := range lines {
		if strings.HasPrefix(l, "lost ") {
			break
		}
		writes++
	}
	require.LessOrEqual(t, writes, 1, "the resumed leader wrote after its lease lapsed")
	require.NoError(t, e.Resign(leading))
}
