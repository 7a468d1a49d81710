package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestLaunch(t *testing.T) {
	RequireRedisServer(t)
	s, err := Launch(t.TempDir())
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(s.Stop)

	if pid := s.Pid(); pid <= 0 {
		t.Fatalf("Pid() = %d, want > 0", pid)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	got, err := c.ConfigGet(ctx, "save").Result()
	if save, ok := got["save"]; err != nil || !ok || save != "" {
		t.Fatalf("CONFIG GET save = %q, %v; want persistence off", got, err)
	}

	s.Stop()
	if pid := s.Pid(); pid != 0 {
		t.Fatalf("Pid() after Stop = %d, want 0", pid)
	}
	s.Stop() // idempotent
}

func TestLaunchBadDir(t *testing.T) {
	RequireRedisServer(t)
	if s, err := Launch(t.TempDir() + "/missing"); err == nil {
		s.Stop()
		t.Fatal("Launch in a missing dir: want an error")
	}
}
