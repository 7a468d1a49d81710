package conn

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestAddr(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6390"})
	defer c.Close()
	require.Equal(t, "127.0.0.1:6390", Of(c).Addr())
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001"}})
	defer cc.Close()
	require.Equal(t, "[127.0.0.1:7000 127.0.0.1:7001]", Of(cc).Addr())
}
