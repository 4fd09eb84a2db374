package record

import (
	"fmt"
	"testing"
	"time"
)

// benchEntry is the entry of chain's benchmarks.
func benchEntry(i int) *Entry {
	return &Entry{
		Time:           time.Date(2026, 11, 29, 12, 0, 0, i, time.UTC),
		Session:        "0f8e6f4c-6a4b-4d61-9d9f-3b1f0c7c2e11",
		Principal:      "alice@example.com",
		Roles:          []string{"dev", "oncall"},
		Origin:         "interactive",
		Server:         "filesystem",
		Tool:           "read_text_file",
		Bound:          true,
		Tier:           "data-read",
		ToolSchemaHash: digestOf("schema"),
		Caps:           []Cap{{Kind: "fs.read", Path: fmt.Sprintf("/home/alice/projects/aegis/internal/chain/file-%d.go", i)}},
		Decision:       Allow,
		Mode:           Enforce,
		Rules:          []string{"allow-project-reads", "deny-ssh"},
		Reason:         "allowed by allow-project-reads",
		PolicyHash:     digestOf("policy"),
		ArgsHash:       digestOf(fmt.Sprint(i)),
		Envelope:       digestOf(fmt.Sprint("env", i)),
	}
}

func BenchmarkDecodeEntry(b *testing.B) {
	e := benchEntry(1)
	e.Seq = 1
	e.Hash, _ = e.ComputeHash()
	line, _ := e.MarshalJSON()
	b.SetBytes(int64(len(line)))
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		var x Entry
		for b.Loop() {
			if _, err := Decode(line, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		var x Entry
		ar := new(Arena)
		for b.Loop() {
			if _, err := DecodeIn(line, &x, ar, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(line, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodeEntry(b *testing.B) {
	e := benchEntry(1)
	var buf []byte
	var t Template
	b.ReportAllocs()
	for b.Loop() {
		buf = appendCanonical(buf[:0], e, &t)
	}
	b.SetBytes(int64(len(buf)))
}
