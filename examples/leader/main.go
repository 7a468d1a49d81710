// Command leader runs a cron job on one of three processes at a time,
// through leader election.
//
// The program starts three candidate processes (itself, run again). Each
// campaigns with election.Run; the leader runs the job every 100 ms,
// stamping each run with its epoch, and every candidate prints the
// changes it observes. The program then kills the leader with SIGKILL: its
// lease (1 s) lapses and the next candidate in line is elected. Then it
// sends SIGTERM to the new leader, which finishes its run, resigns at once
// and exits; the last candidate is elected within milliseconds. Last, it
// checks from the runs' stamps that no two processes ran the job at the
// same time and that epochs only grew.
//
//	go run ./examples/leader                           # embedded miniredis
//	REDIS_ADDR=127.0.0.1:6379 go run ./examples/leader # a real Redis
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/examples/internal/exredis"
)

const (
	name      = "examples:leader:cron"
	childEnv  = "LEADER_EXAMPLE_CANDIDATE" // set in a candidate process: its number
	addrEnv   = "LEADER_EXAMPLE_REDIS"
	leaseTime = time.Second
)

func main() {
	if id := os.Getenv(childEnv); id != "" {
		os.Exit(candidate(id, os.Getenv(addrEnv)))
	}
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// candidate campaigns until SIGTERM, running the job while it leads.
func candidate(id, addr string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	e := election.New(rdb, name, election.WithWatchdogTimeout(leaseTime))
	obsCtx, stopObs := context.WithCancel(context.Background())
	defer stopObs()
	go func() {
		for l := range e.Observe(obsCtx) {
			if l.Vacant() {
				fmt.Printf("observe %s vacant\n", id)
			} else {
				fmt.Printf("observe %s leader %s epoch %d\n", id, l.Value, l.Epoch)
			}
		}
	}()
	err := e.Run(ctx, "process-"+id, func(leading context.Context) error {
		epoch, _ := election.Epoch(leading)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			// One run of the job, stamped with its epoch: a store that
			// checks epochs would refuse a superseded leader's writes.
			start := time.Now().UnixMicro()
			time.Sleep(10 * time.Millisecond)
			fmt.Printf("run %s %d %d %d\n", id, epoch, start, time.Now().UnixMicro())
			select {
			case <-leading.Done(): // lost, or SIGTERM: the run above has drained
				return nil
			case <-tick.C:
			}
		}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("resigned %s\n", id)
	return 0
}

// run starts the candidates, kills the leader, stops the next one, and
// checks the runs.
func run(ctx context.Context, out io.Writer) error {
	srv, err := exredis.Open(out)
	if err != nil {
		return err
	}
	defer srv.Close()
	var mu sync.Mutex
	var lines []string
	leaders := make(chan string, 16)
	procs := map[string]*exec.Cmd{}
	for i := 1; i <= 3; i++ {
		id := strconv.Itoa(i)
		cmd, err := start(id, srv.Addr, func(line string) {
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
			if f := strings.Fields(line); len(f) == 5 && f[0] == "run" {
				select {
				case leaders <- f[1]:
				default:
				}
			}
		})
		if err != nil {
			return err
		}
		procs[id] = cmd
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		time.Sleep(50 * time.Millisecond) // in line in this order
	}
	first, err := waitLeader(leaders, "", 10*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "process %s leads; killing it (SIGKILL)\n", first)
	_ = procs[first].Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	second, err := waitLeader(leaders, first, 10*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "process %s leads %v later (lease %v); stopping it (SIGTERM)\n",
		second, time.Since(killed).Round(100*time.Millisecond), leaseTime)
	_ = procs[second].Process.Signal(syscall.SIGTERM)
	third, err := waitLeader(leaders, second, 10*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "process %s leads after the resignation\n", third)
	time.Sleep(300 * time.Millisecond)
	for _, cmd := range procs {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range procs {
		_ = cmd.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	return report(out, lines)
}

// start runs candidate id, handing each line it prints to seen.
func start(id, addr string, seen func(string)) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+id, addrEnv+"="+addr)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			seen(sc.Text())
		}
	}()
	return cmd, nil
}

// waitLeader returns the first process other than prev seen running the
// job.
func waitLeader(leaders <-chan string, prev string, within time.Duration) (string, error) {
	deadline := time.After(within)
	for {
		select {
		case id := <-leaders:
			if id != prev {
				return id, nil
			}
		case <-deadline:
			return "", fmt.Errorf("no new leader within %v", within)
		}
	}
}
