//go:build redis

package tests

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

type goRedis struct{ *redis.Client }

func (r goRedis) incr(key string) error { return r.Incr(context.Background(), key).Err() }

func (r goRedis) del(keys ...string) error { return r.Del(context.Background(), keys...).Err() }

// benchRedis connects to Redis at $SLOTTED_REDIS_ADDR (default
// 127.0.0.1:6379), or returns nil, and the redis side is skipped.
func benchRedis(b *testing.B) redisIncr {
	addr := os.Getenv("SLOTTED_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64, MinIdleConns: 8})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		b.Logf("no Redis at %s (%v): the redis side is skipped", addr, err)
		rdb.Close()
		return nil
	}
	b.Cleanup(func() { rdb.Close() })
	return goRedis{rdb}
}
