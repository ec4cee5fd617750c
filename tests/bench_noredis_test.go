//go:build !redis

package tests

import "testing"

// Without -tags redis, go-redis is not compiled (it is the largest package a
// default go test would build) and the redis side of BenchmarkCoalescePaired
// is skipped; bench_redis_test.go has the real one.
func benchRedis(b *testing.B) redisIncr {
	b.Log("built without -tags redis: the redis side is skipped")
	return nil
}
