package chain

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTailSigned(t *testing.T) {
	// lastSeg returns the path of dir's last segment.
	lastSeg := func(t *testing.T, dir string) string {
		segs, err := listSegments(dir)
		if err != nil || len(segs) == 0 {
			t.Fatalf("segments: %v, %v", segs, err)
		}
		return segs[len(segs)-1].path
	}
	// closed returns a chain of n entries, closed: signed.
	closed := func(t *testing.T, n int, opts *Options) string {
		dir := t.TempDir()
		logChain(t, dir, opts, n)
		return dir
	}
	// dropLastLine removes the last line of dir's last segment (its
	// checkpoint, leaving the ack before it at the end).
	dropLastLine := func(t *testing.T, dir string) {
		p := lastSeg(t, dir)
		b, _ := os.ReadFile(p)
		i := strings.LastIndexByte(string(b[:len(b)-1]), '\n')
		os.WriteFile(p, b[:i+1], 0o600)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string
		want  bool
	}{
		{"closed", func(t *testing.T) string { return closed(t, 5, nil) }, true},
		{"no segments", func(t *testing.T) string { return t.TempDir() }, true},
		{"opened, nothing appended, closed", func(t *testing.T) string { return closed(t, 0, nil) }, true},
		{"many segments, closed", func(t *testing.T) string { return closed(t, 60, &Options{SegmentSize: 8 << 10}) }, true},
		{"ends with an ack", func(t *testing.T) string {
			d := closed(t, 5, &Options{MaxBatch: 2})
			dropLastLine(t, d)
			b, _ := os.ReadFile(lastSeg(t, d))
			if !strings.Contains(string(b[strings.LastIndexByte(string(b[:len(b)-1]), '\n')+1:]), `{"ack":`) {
				t.Fatal("the chain does not end with an ack line once its checkpoint is removed")
			}
			return d
		}, false},
		{"torn line", func(t *testing.T) string {
			d := closed(t, 5, nil)
			f, _ := os.OpenFile(lastSeg(t, d), os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"args_hash":"ab`)
			f.Close()
			return d
		}, false},
		{"a checkpoint's text inside a torn tail", func(t *testing.T) string {
			d := closed(t, 5, nil)
			f, _ := os.OpenFile(lastSeg(t, d), os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"checkpoint":9`)
			f.Close()
			return d
		}, false},
		{"an empty last segment after a signed one", func(t *testing.T) string {
			d := closed(t, 5, nil)
			os.WriteFile(filepath.Join(d, segmentName(6)), nil, 0o600)
			return d
		}, true},
		{"an empty last segment after an acked one", func(t *testing.T) string {
			d := closed(t, 5, &Options{MaxBatch: 2})
			dropLastLine(t, d)
			os.WriteFile(filepath.Join(d, segmentName(6)), nil, 0o600)
			return d
		}, false},
		{"a last line longer than the window", func(t *testing.T) string {
			d := closed(t, 5, nil)
			f, _ := os.OpenFile(lastSeg(t, d), os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"checkpoint":` + strings.Repeat("x", 9000) + "\n")
			f.Close()
			return d
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			got, err := TailSigned(dir)
			if err != nil || got != tc.want {
				t.Fatalf("TailSigned = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := TailSigned(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("TailSigned of a missing directory: no error")
	}
}
