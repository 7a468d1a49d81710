package member_test

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/member"
)

func Example() {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer c.Close()
	fmt.Println(member.Addr(c))
	// Output: 127.0.0.1:6379
}
