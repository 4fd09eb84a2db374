package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// allowGate forwards every call, at no cost: the benchmarks measure the
// relay, not a decision.
type allowGate struct{}

func (allowGate) Call(context.Context, *Call) (Verdict, error) { return Verdict{Forward: true}, nil }

func connectCommand(b *testing.B, role string) *mcp.ClientSession {
	cs, _ := connectChild(b, role)
	return cs
}

// connectChild connects the Go SDK client to a child process playing role,
// and returns the child's pid too.
func connectChild(b *testing.B, role string) (*mcp.ClientSession, int) {
	b.Helper()
	return connectCmd(b, child(role))
}

// connectCmd connects the Go SDK client to cmd, and returns its pid too.
func connectCmd(b *testing.B, cmd *exec.Cmd) (*mcp.ClientSession, int) {
	b.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs, cmd.Process.Pid
}

// connectSockets connects the Go SDK client to cmd over two socket pairs,
// its standard input and output, and returns its pid too.
func connectSockets(b *testing.B, cmd *exec.Cmd) (*mcp.ClientSession, int) {
	b.Helper()
	var ends [4]*os.File // stdin, client's writer, stdout, client's reader
	for i := 0; i < 4; i += 2 {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			b.Fatal(err)
		}
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
		ends[i], ends[i+1] = os.NewFile(uintptr(fds[0]), "child"), os.NewFile(uintptr(fds[1]), "client")
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = ends[0], ends[2], os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ends[0].Close()
	ends[2].Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: ends[3], Writer: ends[1]}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close(); cmd.Wait() })
	return cs, cmd.Process.Pid
}

// cpuTime returns the CPU time (user and system) process pid has used so
// far, from /proc, in clock ticks of 10 ms; zero where /proc is missing.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces) are
	// space-separated; utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

var echoParams = &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}

func timedCall(b *testing.B, cs *mcp.ClientSession) time.Duration {
	start := time.Now()
	res, err := cs.CallTool(context.Background(), echoParams)
	d := time.Since(start)
	if err != nil || res.IsError {
		b.Fatalf("CallTool: %v %v", res, err)
	}
	return d
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// benchRoundTrip times tools/call round trips from the Go SDK client to the
// demo server, in a subprocess (direct), or through aegis's relay in a
// subprocess of its own wrapping the demo server (as `aegis run` does).
func benchRoundTrip(b *testing.B, role string) {
	cs := connectCommand(b, role)
	for range 50 { // warm up
		timedCall(b, cs)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ds = append(ds, timedCall(b, cs))
	}
	b.ReportMetric(micros(median(ds)), "µs-median")
}

func BenchmarkRelayDirect(b *testing.B) { benchRoundTrip(b, "demo") }

func BenchmarkRelayThroughAegis(b *testing.B) { benchRoundTrip(b, "relay") }

// BenchmarkRelayThroughCopy puts a process that only copies bytes in the
// middle: the cost of the extra process hop alone, which no relay can avoid.
func BenchmarkRelayThroughCopy(b *testing.B) { benchRoundTrip(b, "copy") }

// BenchmarkRelayAddedLatency alternates calls made directly, through a
// process that only copies bytes, and through aegis, so all three see the
// same machine, and reports their medians and the differences: the latency
// aegis adds to one tools/call (budget: 50 µs), and how much of it any
// process in the middle costs.
//
// The relay reads the client's pipes as `aegis run` does (reopened, see
// [ClientStdio]); relay-oscalls too, but with the runtime's system calls
// rather than raw ones (see rawPipe); relay-blocking reads them as
// inherited, each read a blocking read(2). The roles ending in /socket are
// given socket pairs, as a Node client gives its children. If
// $AEGIS_PROXY_BENCH_BASELINE names another build of this package's test
// binary, its relay runs too (base), for a before/after comparison on the
// same machine at the same moment. $AEGIS_PROXY_BENCH_ROLES may name the
// roles to run after demo, separated by commas.
func BenchmarkRelayAddedLatency(b *testing.B) {
	roles := []string{"demo", "copy", "relay", "relay-oscalls", "relay-blocking", "relay/socket", "relay-blocking/socket"}
	if only := os.Getenv("AEGIS_PROXY_BENCH_ROLES"); only != "" {
		// A comma-separated subset, for a closer look; demo comes first.
		roles = append([]string{"demo"}, strings.Split(only, ",")...)
	}
	base := os.Getenv("AEGIS_PROXY_BENCH_BASELINE")
	if base != "" {
		roles = append(roles, "base")
	}
	sessions := make([]*mcp.ClientSession, len(roles))
	pids := make([]int, len(roles))
	cpu := make([]time.Duration, len(roles))
	times := make([][]time.Duration, len(roles))
	for i, role := range roles {
		name, sockets := strings.CutSuffix(role, "/socket")
		cmd := child(name)
		if role == "base" {
			cmd = exec.Command(base, "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=relay")
		}
		if sockets {
			sessions[i], pids[i] = connectSockets(b, cmd)
		} else {
			sessions[i], pids[i] = connectCmd(b, cmd)
		}
		for range 50 {
			timedCall(b, sessions[i])
		}
		times[i] = make([]time.Duration, 0, b.N)
		cpu[i] = cpuTime(pids[i])
	}
	b.ResetTimer()
	for range b.N {
		for i, cs := range sessions {
			times[i] = append(times[i], timedCall(b, cs))
		}
	}
	b.StopTimer()
	for i := range cpu {
		cpu[i] = cpuTime(pids[i]) - cpu[i]
	}
	// The CPU the process in the middle spent per call (its own, not the
	// server's): steadier than latency on a busy machine.
	direct := median(times[0])
	b.ReportMetric(micros(direct), "µs-direct")
	for i := 1; i < len(roles); i++ {
		m := median(times[i])
		b.ReportMetric(micros(cpu[i])/float64(b.N), "µs-cpu-"+roles[i])
		b.ReportMetric(micros(m), "µs-"+roles[i])
		b.ReportMetric(micros(m-direct), "µs-added-"+roles[i])
	}
	if len(roles) > 2 && roles[1] == "copy" {
		b.ReportMetric(micros(median(times[2])-median(times[1])), "µs-added-over-copy")
	}
}

// discardRelay returns a relay whose writes go nowhere, for measuring the
// per-message work alone.
func discardRelay(gate Gate, server io.Writer) *relay {
	return newRelay(context.Background(), io.Discard, server, gate,
		options{maxMsg: DefaultMaxMessageBytes, maxDepth: 256, maxReqs: 1024, log: slog.New(slog.DiscardHandler)})
}

// signalWriter signals each write.
type signalWriter chan struct{}

func (w signalWriter) Write(p []byte) (int, error) { w <- struct{}{}; return len(p), nil }

// BenchmarkRelayMessage measures the relay's work per message, without
// pipes: validation, classification, bookkeeping and the write.
func BenchmarkRelayMessage(b *testing.B) {
	notification := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2,"message":"half"}}` + "\n")
	request := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///home/a/notes.txt"}}` + "\n")
	response := []byte(`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"file:///home/a/notes.txt","mimeType":"text/plain","text":"hello"}]}}` + "\n")
	call := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/home/a/notes.txt"},"_meta":{"progressToken":1}}}` + "\n")
	result := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}` + "\n")
	bigResult := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 64<<10/12) + `"}]}}` + "\n")

	b.Run("notification", func(b *testing.B) {
		r := discardRelay(allowGate{}, io.Discard)
		b.ReportAllocs()
		b.SetBytes(int64(len(notification)))
		for range b.N {
			r.fromClient(notification) // never a call: nothing to decide
		}
	})
	b.Run("request+response", func(b *testing.B) {
		r := discardRelay(allowGate{}, io.Discard)
		b.ReportAllocs()
		for range b.N {
			r.fromClient(request)
			r.fromServer(response)
		}
	})
	for _, tc := range []struct {
		name   string
		result []byte
	}{{"tools_call+result", result}, {"tools_call+64KiB_result", bigResult}} {
		b.Run(tc.name, func(b *testing.B) {
			forwarded := make(signalWriter, 1)
			r := discardRelay(allowGate{}, forwarded)
			b.ReportAllocs()
			b.SetBytes(int64(len(call) + len(tc.result)))
			for range b.N {
				r.decide(r.fromClient(call)) // decide here, as readClient does
				<-forwarded
				r.fromServer(tc.result)
			}
		})
	}
}

// BenchmarkRelayPipes measures a request and its response over in-memory
// pipes, between a client and an echoing server, with and without the relay
// in between; the difference is what the relay adds per round trip
// (validation, bookkeeping and two more goroutine hand-offs).
func BenchmarkRelayPipes(b *testing.B) {
	for _, tc := range []struct {
		name  string
		relay bool
		msg   string
	}{
		{"direct/request", false, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x"}}`},
		{"relay/request", true, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x"}}`},
		{"direct/tools_call", false, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`},
		{"relay/tools_call", true, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The server answers every line with a fixed result to id 1.
			srvIn, toSrv := io.Pipe()
			fromSrv, srvOut := io.Pipe()
			go func() {
				sc := bufio.NewScanner(srvIn)
				resp := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}` + "\n")
				for sc.Scan() {
					srvOut.Write(resp)
				}
			}()
			clientW, clientR := io.Writer(toSrv), io.Reader(fromSrv)
			if tc.relay {
				relIn, cw := io.Pipe()
				cr, relOut := io.Pipe()
				r := newRelay(ctx, relOut, toSrv, allowGate{},
					options{maxMsg: DefaultMaxMessageBytes, maxDepth: 256, maxReqs: 1024, log: slog.New(slog.DiscardHandler)})
				go r.clientLoop(relIn)
				go r.serverLoop(fromSrv)
				clientW, clientR = cw, cr
				defer cw.Close()
			}
			defer toSrv.Close()
			rd := bufio.NewReader(clientR)
			line := []byte(tc.msg + "\n")
			ds := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if _, err := clientW.Write(line); err != nil {
					b.Fatal(err)
				}
				if _, err := rd.ReadSlice('\n'); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			b.ReportMetric(micros(median(ds)), "µs-median")
		})
	}
}

// BenchmarkValidate measures strict validation throughput on a large result.
func BenchmarkValidate(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` +
		strings.Repeat("lorem ipsum \\n dolor \\u00e9 ", 1<<20/28) + `"}],"structuredContent":{` +
		strings.TrimSuffix(strings.Repeat(`"k":1,`, 1), ",") + `}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for range b.N {
		if _, err := parseMessage(msg, 256); err != nil {
			b.Fatal(fmt.Sprint(err))
		}
	}
}
