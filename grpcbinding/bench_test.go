//go:build unix

package grpcbinding

import (
	"context"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2akit/idempotency"
)

// BenchmarkGRPC compares the throughput of sends over gRPC to a2a-go's gRPC server
// (the echo agent, a2a-go's in-memory task store) with and without the kit's
// interceptors, 8 sends in flight, over a TCP loopback connection. Each side sends
// b.N/40 sends in each of 40 alternating rounds (short rounds, so that the load of a
// shared machine falls on every side alike), and the benchmark reports the
// throughput ratios of the same run:
//
//   - unkeyed/bare: unkeyed sends through the interceptors, against the bare server;
//   - keyed/bare: keyed first sends through the interceptors (memstore), against
//     unkeyed sends to the bare server (SPEC §5's "keyed first sends");
//   - keyed/bare-keyed: the same keyed sends, against the bare server fed the same
//     keyed messages (the kit's own cost).
//
// The same ratios are reported for the CPU time of the process (cpu-…), server and
// client together: bare CPU over the side's CPU, so that 1 means no cost and 0.9 a
// tenth more CPU per send. They are less moved than the throughput ratios by other
// jobs on a shared machine. The client is the generated gRPC client, so that its cost
// is small and the same on every side. Every send has a fresh messageId and key.
func BenchmarkGRPC(b *testing.B) {
	for _, streaming := range []bool{false, true} {
		name := "unary"
		if streaming {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			bare := startServer(b, serverConfig{}).raw(b)
			kit := startServer(b, serverConfig{keyed: true}).raw(b)
			sides := []struct {
				name   string
				client a2apb.A2AServiceClient
				keyed  bool
			}{{"bare", bare, false}, {"bare-keyed", bare, true}, {"unkeyed", kit, false}, {"keyed", kit, true}}
			elapsed := make([]time.Duration, len(sides))
			cpu := make([]time.Duration, len(sides))
			const rounds = 40
			per := max(b.N/rounds, 1)
			b.ResetTimer()
			for range rounds {
				for i, s := range sides {
					wall, used := sendMany(b, s.client, per, s.keyed, streaming)
					elapsed[i] += wall
					cpu[i] += used
				}
			}
			b.StopTimer()
			for _, m := range []struct {
				prefix string
				d      []time.Duration
			}{{"", elapsed}, {"cpu-", cpu}} {
				ratio := func(base, side int) float64 { return float64(m.d[base]) / float64(m.d[side]) }
				b.ReportMetric(ratio(0, 2), m.prefix+"unkeyed/bare")
				b.ReportMetric(ratio(0, 3), m.prefix+"keyed/bare")
				b.ReportMetric(ratio(1, 3), m.prefix+"keyed/bare-keyed")
			}
			b.ReportMetric(0, "ns/op") // the sides' times are in the ratios
		})
	}
}

// sendMany sends n sends to c, 8 at a time, and returns how long they took and the
// CPU time the process used meanwhile.
func sendMany(b *testing.B, c a2apb.A2AServiceClient, n int, keyed, streaming bool) (wall, cpu time.Duration) {
	b.Helper()
	const inFlight = 8
	reqs := make([]*a2apb.SendMessageRequest, n)
	for i := range reqs {
		req := unkeyedRequest()
		if keyed {
			req = keyedRequest(b, idempotency.NewKey())
		}
		reqs[i] = rawRequest(b, req)
	}
	next := make(chan *a2apb.SendMessageRequest, n)
	for _, r := range reqs {
		next <- r
	}
	close(next)
	errs := make(chan error, inFlight)
	var wg sync.WaitGroup
	start, startCPU := time.Now(), processCPU(b)
	for range inFlight {
		wg.Go(func() {
			for req := range next {
				if err := sendOne(c, req, streaming); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	wall, cpu = time.Since(start), processCPU(b)-startCPU
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return wall, cpu
}

// processCPU returns the user and system CPU time the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sendOne(c a2apb.A2AServiceClient, req *a2apb.SendMessageRequest, streaming bool) error {
	ctx := context.Background()
	if !streaming {
		_, err := c.SendMessage(ctx, req)
		return err
	}
	stream, err := c.SendStreamingMessage(ctx, req)
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}
