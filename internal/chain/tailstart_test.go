package chain

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// Lines of the shapes tailStart tells apart; it reads prefixes and
// newlines only, so their bodies need not be real.
var (
	tE = `{"args_hash":"` + strings.Repeat("e", 40) + `"}`
	tK = `{"checkpoint":7,"hash":"` + strings.Repeat("c", 64) + `"}`
	tA = `{"ack":7,"hash":"` + strings.Repeat("a", 64) + `"}`
)

// refTailStart is tailStart done the obvious way, on the whole segment in
// memory: split the complete lines, take the last that starts like a
// checkpoint, and step back over the line before it and, when that is an
// ack, one more.
func refTailStart(data []byte) tailMark {
	end := bytes.LastIndexByte(data, '\n') + 1
	var starts []int64
	for off := 0; off < end; {
		starts = append(starts, int64(off))
		off += bytes.IndexByte(data[off:], '\n') + 1
	}
	for i := len(starts) - 1; i >= 0; i-- {
		if !bytes.HasPrefix(data[starts[i]:], checkpointPrefix) {
			continue
		}
		m := tailMark{ck: starts[i], from: starts[i]}
		if i >= 1 {
			m.from = starts[i-1]
			if i >= 2 && bytes.HasPrefix(data[starts[i-1]:], ackPrefix) {
				m.from = starts[i-2]
			}
		}
		return m
	}
	return tailMark{ck: -1}
}

// TestTailStart: tailStart finds the last complete checkpoint line of a
// segment and the entry it signs, reading back from the end in windows
// of any size, lines longer than the window included.
func TestTailStart(t *testing.T) {
	long := `{"args_hash":"` + strings.Repeat("L", 10_000) + `"}`
	// off returns the offset of the line numbered i (from 0) of lines.
	off := func(i int, lines ...string) int64 {
		return int64(len(strings.Join(lines[:i], "")))
	}
	tests := []struct {
		name string
		data string
		want tailMark
	}{
		{name: "empty segment", data: "", want: tailMark{ck: -1}},
		{name: "only newlines", data: "\n\n\n", want: tailMark{ck: -1}},
		// A segment has no header line: the nearest is a segment whose
		// first and only line is a checkpoint, with nothing to sign.
		{name: "only a checkpoint", data: tK + "\n", want: tailMark{ck: 0, from: 0}},
		{name: "one entry, no newline", data: tE, want: tailMark{ck: -1}},
		{name: "entries, no checkpoint", data: tE + "\n" + tE + "\n" + tA + "\n", want: tailMark{ck: -1}},
		{name: "entry then checkpoint", data: tE + "\n" + tK + "\n", want: tailMark{ck: off(1, tE+"\n"), from: 0}},
		{name: "ack between entry and checkpoint", data: tE + "\n" + tE + "\n" + tA + "\n" + tK + "\n",
			want: tailMark{ck: off(3, tE+"\n", tE+"\n", tA+"\n"), from: off(1, tE+"\n")}},
		{name: "ack first, then checkpoint", data: tA + "\n" + tK + "\n", want: tailMark{ck: off(1, tA+"\n"), from: 0}},
		{name: "two checkpoints in a row", data: tE + "\n" + tK + "\n" + tK + "\n",
			want: tailMark{ck: off(2, tE+"\n", tK+"\n"), from: off(1, tE+"\n")}},
		{name: "unsigned entries after", data: tE + "\n" + tK + "\n" + tE + "\n" + tE + "\n" + tA + "\n",
			want: tailMark{ck: off(1, tE+"\n"), from: 0}},
		{name: "torn last line", data: tE + "\n" + tK + "\n" + tE + "\n" + tE[:20],
			want: tailMark{ck: off(1, tE+"\n"), from: 0}},
		{name: "torn checkpoint after an ack", data: tE + "\n" + tK + "\n" + tE + "\n" + tA + "\n" + tK[:30],
			want: tailMark{ck: off(1, tE+"\n"), from: 0}},
		{name: "whole checkpoint without its newline", data: tE + "\n" + tK + "\n" + tE + "\n" + tA + "\n" + tK,
			want: tailMark{ck: off(1, tE+"\n"), from: 0}},
		{name: "checkpoint without newline alone", data: tK, want: tailMark{ck: -1}},
		{name: "CRLF", data: tE + "\r\n" + tK + "\r\n", want: tailMark{ck: off(1, tE+"\r\n"), from: 0}},
		{name: "CR only", data: tE + "\r" + tK + "\r", want: tailMark{ck: -1}},
		{name: "JSON fragment at the end, whole line", data: tE + "\n" + tK + "\n" + `{"checkpoint":1}` + "\n",
			want: tailMark{ck: off(2, tE+"\n", tK+"\n"), from: off(1, tE+"\n")}},
		{name: "JSON fragment at the end, torn", data: tE + "\n" + tK + "\n" + `"}` + "\n" + `{"checkpoint":1}`,
			want: tailMark{ck: off(1, tE+"\n"), from: 0}},
		{name: "checkpoint text inside a line", data: tE + "\n" + tK + "\n" + "x" + tK + "\n" + tE + tK + "\n",
			want: tailMark{ck: off(1, tE+"\n"), from: 0}},
		{name: "checkpoint prefix cut short", data: tE + "\n" + `{"checkpoint"` + "\n", want: tailMark{ck: -1}},
		{name: "empty line before the checkpoint", data: tE + "\n\n" + tK + "\n",
			want: tailMark{ck: off(2, tE+"\n", "\n"), from: off(1, tE+"\n")}},
		{name: "line longer than the window before the checkpoint", data: tE + "\n" + long + "\n" + tA + "\n" + tK + "\n",
			want: tailMark{ck: off(3, tE+"\n", long+"\n", tA+"\n"), from: off(1, tE+"\n")}},
		{name: "line longer than the window after the checkpoint", data: tE + "\n" + tK + "\n" + long + "\n" + long,
			want: tailMark{ck: off(1, tE+"\n"), from: 0}},
		{name: "long first line, then checkpoint", data: long + "\n" + tK + "\n", want: tailMark{ck: off(1, long+"\n"), from: 0}},
	}
	for _, tt := range tests {
		if ref := refTailStart([]byte(tt.data)); ref != tt.want {
			t.Fatalf("%s: the reference reads %+v, the table says %+v", tt.name, ref, tt.want)
		}
		for _, window := range []int{1, 2, 13, 64, 4096, 0} {
			t.Run(fmt.Sprintf("%s/window=%d", tt.name, window), func(t *testing.T) {
				got, err := tailStart(strings.NewReader(tt.data), int64(len(tt.data)), window)
				if err != nil || got != tt.want {
					t.Fatalf("tailStart = %+v, %v; want %+v", got, err, tt.want)
				}
			})
		}
	}
}

// TestTailStartShortRead: a segment that is shorter than its size said (it
// shrank under the reader) is an error, not a guess.
func TestTailStartShortRead(t *testing.T) {
	data := tE + "\n" + tK + "\n"
	if _, err := tailStart(strings.NewReader(data), int64(len(data))+10, 0); err == nil {
		t.Fatal("tailStart of a segment shorter than its size = nil error")
	}
}

// TestTailStartLongLine: a line longer than a chain line may be, torn at
// the end or whole before the checkpoint, stops tailStart after about
// maxLine bytes, as it stops a forward reader (the walk of the whole
// segment then reports it), however long the line is.
func TestTailStartLongLine(t *testing.T) {
	defer func(m int) { maxLine = m }(maxLine)
	maxLine = 100
	for _, tt := range []struct {
		name string
		data string
	}{
		{"torn", tE + "\n" + tK + "\n" + strings.Repeat("x", 10_000)},
		{"after the checkpoint", tE + "\n" + tK + "\n" + strings.Repeat("x", 10_000) + "\n"},
		{"before the checkpoint", strings.Repeat("x", 10_000) + "\n" + tK + "\n"},
	} {
		for _, window := range []int{7, 64, 0} {
			t.Run(fmt.Sprintf("%s/window=%d", tt.name, window), func(t *testing.T) {
				r := &countingReader{r: strings.NewReader(tt.data)}
				m, err := tailStart(r, int64(len(tt.data)), window)
				if !errors.Is(err, errLongLine) {
					t.Fatalf("tailStart = %+v, %v; want errLongLine", m, err)
				}
				if limit := int64(maxLine + 1 + max(window, tailWindow) + len(checkpointPrefix)); r.n > limit {
					t.Errorf("read %d bytes of a %d-byte segment; want at most %d", r.n, len(tt.data), limit)
				}
			})
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReaderAt
	n int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// FuzzTailStart checks tailStart against refTailStart on any bytes, with
// any window: the same mark, and no panic.
func FuzzTailStart(f *testing.F) {
	f.Add([]byte(tE+"\n"+tK+"\n"), uint16(3))
	f.Add([]byte(tE+"\n"+tA+"\n"+tK+"\n"+tE), uint16(1))
	f.Add([]byte(tK+"\r\n"+tK), uint16(16))
	f.Add([]byte("\n{\"checkpoint\":\n{\"ack\":\n"), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, window uint16) {
		want := refTailStart(data)
		got, err := tailStart(bytes.NewReader(data), int64(len(data)), int(window))
		if err != nil || got != want {
			t.Fatalf("tailStart(%q, window %d) = %+v, %v; want %+v", data, window, got, err, want)
		}
	})
}
