package conn

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// addr names client's server(s) for errors.
func addr(client redis.UniversalClient) string {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return fmt.Sprint(c.Options().Addrs)
	}
	return fmt.Sprintf("%T", client)
}

// Servers returns the server addresses c's options name, and its database.
// A Sentinel client names none: its master is found at run time.
func (c Client) Servers() ([]string, int) {
	switch c := c.rdb.(type) {
	case *redis.Client:
		if o := c.Options(); o.Addr != "FailoverClient" {
			return []string{o.Addr}, o.DB
		}
	case *redis.ClusterClient:
		return c.Options().Addrs, 0
	}
	return nil, 0
}
