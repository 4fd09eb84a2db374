package sandbox

import (
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkStartup measures the sandbox's start-up budget (issue 16: at
// most 30 ms more than starting bare): /bin/true started bare and in the
// full sandbox, alternating, at least 20 of each, and reports the medians
// and what the sandbox adds. It asserts nothing.
//
//	go test -run - -bench Startup -benchtime 20x ./internal/sandbox
func BenchmarkStartup(b *testing.B) {
	if ms := (&Probe{Missing: ProbeKernel().Missing}).missing(); len(ms) > 0 {
		b.Skipf("the kernel lacks a part of the sandbox: %v", &UnavailableError{Missing: ms})
	}
	spec := &Spec{Mode: Required, Network: ProxyNetwork, Masked: []string{"/root/.ssh"}}
	var bare, boxed []time.Duration
	run := func() {
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))

		t0 = time.Now()
		cmd, sb, err := Command(spec, []string{"/bin/true"})
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		boxed = append(boxed, time.Since(t0))
		sb.Close()
	}
	for b.Loop() {
		run()
	}
	for len(bare) < 20 {
		run()
	}
	mb, ms := median(bare), median(boxed)
	b.ReportMetric(float64(mb.Microseconds())/1000, "bare-ms")
	b.ReportMetric(float64(ms.Microseconds())/1000, "sandboxed-ms")
	b.ReportMetric(float64((ms-mb).Microseconds())/1000, "added-ms")
	b.ReportMetric(float64(ms)/float64(mb), "ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
