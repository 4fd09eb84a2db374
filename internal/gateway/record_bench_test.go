package gateway

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/envelope"
	"github.com/aegis-mcp/aegis/internal/policy"
)

// BenchmarkRecordCall is what `aegis run`'s gate does for an allowed call
// once its pin is found: the whole check, the chain entry made durable
// (on /dev/shm, where an fsync costs nothing) and the envelope written.
// cold evicts the caches between calls (it streams through 32 MiB, outside
// the timer), as the client's and the server's processes do between two
// calls of a proxy: the end-to-end bench (e2e, BenchmarkRunAddedLatency)
// sees the gate at about its cold cost.
func BenchmarkRecordCall(b *testing.B) {
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			dir, err := os.MkdirTemp("/dev/shm", "aegis-record-bench-")
			if err != nil {
				b.Skipf("no /dev/shm: %v", err)
			}
			defer os.RemoveAll(dir)
			log, err := chain.Open(dir+"/chain", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer log.Close()
			envs, err := envelope.Open(dir+"/envelopes", 0)
			if err != nil {
				b.Fatal(err)
			}
			defer envs.Close()
			e, c := typicalCall(b)
			rec := &recorder{Engine: e, Log: log, Envelopes: envs}
			ctx := context.Background()
			var m callMem
			call := func() {
				v, _, err := rec.call(ctx, c, &m)
				if err != nil || v.Effect != policy.Allow {
					b.Fatal(v.Reason(), err)
				}
			}
			if !cold {
				b.ReportAllocs()
				for b.Loop() {
					call()
				}
				return
			}
			// Timed call by call, not with StopTimer, which reads the
			// memory statistics and flushes the allocator's caches.
			evict := make([]byte, 32<<20)
			var in time.Duration
			for b.Loop() {
				for i := 0; i < len(evict); i += 64 {
					evict[i]++
				}
				start := time.Now()
				call()
				in += time.Since(start)
			}
			b.ReportMetric(float64(in.Nanoseconds())/float64(b.N), "ns/call")
		})
	}
}
