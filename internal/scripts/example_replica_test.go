package scripts_test

import (
	"context"
	"fmt"
	"testing/fstest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/scripts"
)

var setScript = scripts.Load(fstest.MapFS{"set.lua": {Data: []byte(
	"-- KEYS[1] the key; ARGV[1] its value\nreturn redis.call('set', KEYS[1], ARGV[1])")}}, "set.lua")

// A write acknowledged by the replicas of its server, or found too little
// acknowledged. A server without replicas (miniredis here) gets no WAIT:
// every write is enough.
func ExampleCall_Synced() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	p := scripts.ReplicaPolicy{Timeout: time.Second, Min: 1}
	cmd, acks := setScript.With(1, "job", "taken").Synced(context.Background(), conn.Of(rdb), p)
	fmt.Println(cmd.Val(), acks.Want, p.Enough(acks))
	fmt.Println(p.Err(scripts.Acks{Want: 2, Got: 0}))
	// Output:
	// OK 0 true
	// not acquired: too few replicas acknowledged: 0 of 2 replicas acknowledged within 1s, 1 required
}
