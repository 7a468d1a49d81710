package doctor_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/cmd/relock/internal/doctor"
)

func Example() {
	// miniredis answers TIME but has no INFO memory or CONFIG: the
	// doctor says what it could not read instead of calling it fine.
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rep := doctor.CheckServer(context.Background(), rdb, doctor.Config{})
	for _, f := range rep.Findings {
		fmt.Println(f.Check, f.Severity)
	}
	fmt.Println("worst:", rep.Worst)
	// Output:
	// version info
	// eviction warn
	// persistence warn
	// replicas warn
	// clock ok
	// acl info
	// worst: warn
}
