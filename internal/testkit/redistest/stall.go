package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StallServer speaks just enough RESP for go-redis to open a pub/sub
// connection to it, and holds back its reply to each SUBSCRIBE and
// UNSUBSCRIBE until the test sends it, so a test can see what a subscriber
// does while a subscription is in flight.
type StallServer struct {
	Addr   string
	l      net.Listener
	subs   chan Stalled // SUBSCRIBEs received, one per channel
	unsubs chan Stalled // UNSUBSCRIBEs received, one per channel

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// Stalled is one channel of a SUBSCRIBE or UNSUBSCRIBE the StallServer
// has not answered yet.
type Stalled struct {
	conn    net.Conn
	Channel string
}

// stallWait bounds the wait for a command to reach the StallServer.
const stallWait = 10 * time.Second

// StartStallServer starts a StallServer on a free loopback port; it stops
// at t.Cleanup, closing every connection.
func StartStallServer(t testing.TB) *StallServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: stall server: %v", err)
	}
	s := &StallServer{Addr: l.Addr().String(), l: l, subs: make(chan Stalled, 100), unsubs: make(chan Stalled, 100)}
	s.wg.Go(s.accept)
	t.Cleanup(s.close)
	return s
}

// Client returns a client of s (RESP2, no identity, no retries), closed at
// t.Cleanup.
func (s *StallServer) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// NextSubscribe returns the next channel subscribed, failing t if none
// comes within 10 s.
func (s *StallServer) NextSubscribe(t testing.TB) Stalled {
	t.Helper()
	select {
	case sub := <-s.subs:
		return sub
	case <-time.After(stallWait):
		t.Fatal("redistest: no SUBSCRIBE reached the stall server")
		return Stalled{}
	}
}

// NextUnsubscribe returns the next channel unsubscribed, failing t if
// none comes within 10 s.
func (s *StallServer) NextUnsubscribe(t testing.TB) Stalled {
	t.Helper()
	select {
	case sub := <-s.unsubs:
		return sub
	case <-time.After(stallWait):
		t.Fatal("redistest: no UNSUBSCRIBE reached the stall server")
		return Stalled{}
	}
}

// Confirm sends the reply to a stalled SUBSCRIBE.
func (s *StallServer) Confirm(t testing.TB, sub Stalled) {
	t.Helper()
	if _, err := fmt.Fprintf(sub.conn, "*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(sub.Channel), sub.Channel); err != nil {
		t.Fatalf("redistest: confirm SUBSCRIBE %s: %v", sub.Channel, err)
	}
}

// ConfirmUnsubscribe sends the reply to a stalled UNSUBSCRIBE.
func (s *StallServer) ConfirmUnsubscribe(t testing.TB, sub Stalled) {
	t.Helper()
	if _, err := fmt.Fprintf(sub.conn, "*3\r\n$11\r\nunsubscribe\r\n$%d\r\n%s\r\n:0\r\n", len(sub.Channel), sub.Channel); err != nil {
		t.Fatalf("redistest: confirm UNSUBSCRIBE %s: %v", sub.Channel, err)
	}
}

func (s *StallServer) accept() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Go(func() { s.serve(c) })
	}
}

func (s *StallServer) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		switch strings.ToLower(args[0]) {
		case "subscribe":
			for _, ch := range args[1:] {
				s.subs <- Stalled{conn: c, Channel: ch}
			}
		case "unsubscribe":
			for _, ch := range args[1:] {
				s.unsubs <- Stalled{conn: c, Channel: ch}
			}
		default: // HELLO and the like: go-redis falls back to RESP2
			_, _ = io.WriteString(c, "-ERR unknown command\r\n")
		}
	}
}

func (s *StallServer) close() {
	_ = s.l.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// readCommand reads one RESP array of bulk strings, as clients send.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}
