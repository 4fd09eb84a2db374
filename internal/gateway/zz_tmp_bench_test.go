package gateway

import (
	"context"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/session"
	"github.com/aegis-mcp/aegis/internal/shape"
)

func BenchmarkZZParts(b *testing.B) {
	for _, off := range []string{"none", "session", "schema", "templates", "edits", "dlp", "caps", "all"} {
		b.Run(off, func(b *testing.B) {
			e := newEngine(b, "")
			fs := e.servers["fs"]
			mustache := shape.Mustache
			if off != "templates" && off != "all" {
				fs.Templates = &mustache
			}
			if off != "dlp" && off != "all" {
				fs.DLP = &DLP{Arguments: dlp.Actions{Default: dlp.ActionDeny}, Results: dlp.Actions{Default: dlp.ActionRedact}}
			}
			tool := &Tool{}
			if off != "schema" && off != "all" {
				tool.Clamp = map[string]float64{"/head": 1000}
			}
			if off != "edits" && off != "all" {
				tool.Clear = []args.Pointer{mustPointer(b, "/tail")}
				tool.Set = []Assign{{Pointer: mustPointer(b, "/encoding"), Value: []byte(`"utf-8"`)}}
			}
			if off != "caps" && off != "all" {
				tool.Caps = session.Limits{PerTurn: 1 << 30, PerSession: 1 << 30}
			}
			fs.Tools = map[string]*Tool{"read_text_file": tool}
			c := &Call{Principal: "alice", Server: "fs", Tool: "read_text_file",
				Arguments: []byte(`{"path":"/home/u/projects/app/internal/server/handler.go","head":40}`)}
			if off != "session" && off != "all" {
				e.OpenSession("s", policy.Interactive)
				c.Session = "s"
			}
			if off != "schema" && off != "all" {
				c.Schema, c.SchemaKey = []byte(readTextFileSchema), [32]byte{1}
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if v := e.Check(ctx, c); v.Effect != policy.Allow {
					b.Fatal(v.Reason())
				}
			}
		})
	}
}
