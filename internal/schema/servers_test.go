package schema

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loadTools reads a tools/list result saved in testdata and returns each tool's
// inputSchema by name. The files are what the servers listed (see the package
// testdata README).
func loadTools(t testing.TB, file string) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(b, &tools); err != nil {
		t.Fatal(err)
	}
	m := map[string]json.RawMessage{}
	for _, tl := range tools {
		m[tl.Name] = tl.InputSchema
	}
	return m
}

func TestServerFilesystem(t *testing.T) {
	tools := loadTools(t, "testdata/server-filesystem.tools.json")
	if len(tools) < 14 {
		t.Fatalf("found %d tools; the fixture is incomplete", len(tools))
	}
	compiled := map[string]*Schema{}
	for name, sch := range tools {
		s, err := Compile(sch, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		compiled[name] = s
	}
	tests := []struct {
		tool, args, want string
	}{
		{"read_text_file", `{"path":"/tmp/fsroot/a.txt"}`, ""},
		{"read_text_file", `{"path":"/tmp/fsroot/a.txt","head":10}`, ""},
		{"read_text_file", `{"path":"/tmp/fsroot/a.txt","head":"10"}`, "/head type"},
		{"read_text_file", `{"path":"/tmp/fsroot/a.txt","encoding":"base64"}`, "/encoding additionalProperties"},
		{"read_text_file", `{"paths":["/tmp/fsroot/a.txt"]}`, "/path required"},
		{"read_text_file", `{"path":["/tmp/fsroot/a.txt","/etc/passwd"]}`, "/path type"},
		{"read_multiple_files", `{"paths":["/tmp/fsroot/a","/tmp/fsroot/b"]}`, ""},
		{"read_multiple_files", `{"paths":[]}`, "/paths minItems"},
		{"read_multiple_files", `{"paths":["/tmp/fsroot/a",{"path":"/etc/passwd"}]}`, "/paths/1 type"},
		{"write_file", `{"path":"/tmp/fsroot/a","content":"hello"}`, ""},
		{"write_file", `{"path":"/tmp/fsroot/a","content":"hello","mode":"0777"}`, "/mode additionalProperties"},
		{"write_file", `{"path":"/tmp/fsroot/a"}`, "/content required"},
		{"edit_file", `{"path":"/tmp/fsroot/a","edits":[{"oldText":"x","newText":"y"}],"dryRun":true}`, ""},
		{"edit_file", `{"path":"/tmp/fsroot/a","edits":[{"oldText":"x","newText":"y","replaceAll":true}]}`, "/edits/0/replaceAll additionalProperties"},
		{"edit_file", `{"path":"/tmp/fsroot/a","edits":[{"oldText":"x"}]}`, "/edits/0/newText required"},
		{"edit_file", `{"path":"/tmp/fsroot/a","edits":[{"oldText":"x","newText":"y"}],"dryRun":"false"}`, "/dryRun type"},
		{"list_directory_with_sizes", `{"path":"/tmp/fsroot","sortBy":"size"}`, ""},
		{"list_directory_with_sizes", `{"path":"/tmp/fsroot","sortBy":"date"}`, "/sortBy enum"},
		{"directory_tree", `{"path":"/tmp/fsroot","excludePatterns":["*.git","node_modules"]}`, ""},
		{"directory_tree", `{"path":"/tmp/fsroot","excludePatterns":"*.git"}`, "/excludePatterns type"},
		{"move_file", `{"source":"/tmp/fsroot/a","destination":"/tmp/fsroot/b"}`, ""},
		{"move_file", `{"source":"/tmp/fsroot/a","destination":"/tmp/fsroot/b","overwrite":true}`, "/overwrite additionalProperties"},
		{"search_files", `{"path":"/tmp/fsroot","pattern":"*.go"}`, ""},
		{"get_file_info", `{"path":"/tmp/fsroot/a","followSymlinks":true}`, "/followSymlinks additionalProperties"},
		{"list_allowed_directories", `{}`, ""},
		{"list_allowed_directories", `{"path":"/"}`, "/path additionalProperties"},
		{"create_directory", `{"path":"/tmp/fsroot/d","Path":"/etc"}`, " json"}, // case-variant duplicate, refused by the decoder
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			_, _, err := compiled[tt.tool].Check([]byte(tt.args))
			if diff := cmp.Diff(tt.want, verdict(err)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\nerr: %v", diff, err)
			}
		})
	}

	head := mustCompile(t, string(tools["read_text_file"]), &Options{Clamp: map[string]Range{"/head": Ceiling(1000), "/tail": Ceiling(1000)}})
	out, clamped, err := head.Check([]byte(`{"path":"/tmp/fsroot/big.log","head":1e9}`))
	if err != nil || string(out) != `{"path":"/tmp/fsroot/big.log","head":1000}` || !cmp.Equal(clamped, []string{"/head"}) {
		t.Errorf("clamped head: %q %q %v", out, clamped, err)
	}
}

func TestServerEverything(t *testing.T) {
	tools := loadTools(t, "testdata/server-everything.tools.json")
	for name, sch := range tools {
		if _, err := Compile(sch, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	links := mustCompile(t, string(tools["get-resource-links"]), &Options{Clamp: map[string]Range{"/count": Ceiling(5)}})
	out, clamped, err := links.Check([]byte(`{"count":9}`))
	if err != nil || string(out) != `{"count":5}` || len(clamped) != 1 {
		t.Errorf("clamped count: %q %q %v", out, clamped, err)
	}
	if _, err := Compile(tools["get-resource-links"], &Options{Clamp: map[string]Range{"/count": Ceiling(20)}}); err == nil {
		t.Error("a ceiling above the schema's maximum 10 compiled")
	}
	gz := mustCompile(t, string(tools["gzip-file-as-resource"]), nil)
	for args, want := range map[string]string{
		`{"name":"r.gz","data":"https://example.com/README.md","outputType":"resource"}`: "",
		`{"data":"../../etc/passwd"}`:       "/data format",
		`{"outputType":"file"}`:             "/outputType enum",
		`{"data":"https://x","headers":{}}`: "/headers additionalProperties",
	} {
		if _, _, err := gz.Check([]byte(args)); verdict(err) != want {
			t.Errorf("gzip %s: got %v, want %q", args, err, want)
		}
	}
}
