package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// asMain makes the test binary run main instead of the tests, so that a
// test can start the command as a process with a real stdin.
const asMain = "RELOCK_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(redistest.Main(m))
}

// relock runs the command with args and stdin as its standard input, and
// returns its exit code and stderr.
func relock(t *testing.T, stdin *os.File, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run relock %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func TestIsTerminalIsFalseForDevNull(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Errorf("isTerminal(%s) = true: a character device that is no terminal", os.DevNull)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(r) {
		t.Error("isTerminal(pipe) = true")
	}
}

// Cron, systemd and `ssh host cmd` give a command /dev/null as stdin: a
// force unlock must refuse there without --yes, as it does on a pipe,
// rather than ask a question nobody can answer.
func TestUnlockForceWithDevNullStdinRefuses(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := context.Background()
			m := lock.New(env.Client, "job:nightly", lock.WithLeaseTime(time.Minute))
			held, err := m.Lock(core.WithOwner(ctx, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa:1"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Unlock(held) })
			null, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			defer null.Close()

			code, stderr := relock(t, null, "unlock", "--force", "--addr", env.Client.Options().Addr, "job:nightly")
			if code != 1 || strings.Contains(stderr, "[y/N]") || !strings.Contains(stderr, "stdin is not a terminal") {
				t.Errorf("unlock --force with stdin %s: exit %d, stderr:\n%s\nwant exit 1, a refusal and no prompt", os.DevNull, code, stderr)
			}
			if n := env.Client.Exists(ctx, "job:nightly").Val(); n != 1 {
				t.Error("the lock was released")
			}
		})
	}
}
