package archtest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/aegis-mcp/aegis"

type pkg struct {
	ImportPath string
	Dir        string
	Doc        string
	Imports    []string
	GoFiles    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found %d packages; the test would check nothing", len(pkgs))
	}
	return pkgs
}

// levels places every package of aegis on a floor of DESIGN.md's layout:
// a package imports only packages on lower floors (imports point down:
// cmd → proxy → gateway → the steps → the ground floor), and on its own
// floor only what sideways allows. A package not listed fails the test:
// adding one means deciding where it sits.
var levels = map[string]int{
	// 0: the call's vocabulary and small helpers that know nothing of aegis.
	"internal/args":       0,
	"internal/capability": 0,
	"internal/strictyaml": 0,
	"internal/filelock":   0,
	"internal/atomicfile": 0,
	"internal/jcsref":     0, // a test-only reference: RFC 8785 written the obvious way
	"internal/difftest":   0, // test-only: the differential harness of the speed twins
	"internal/dnstest":    0, // test-only: a DNS server on loopback whose answers change
	"internal/pgtest":     0, // test-only: a PostgreSQL schema of a test's own
	"internal/plaintext":  0, // text that is not plain, quoted for a terminal or a file
	// 1: one step of the pipeline each, or one store.
	"internal/binding":     1,
	"internal/policy":      1,
	"internal/dlp":         1,
	"internal/shape":       1,
	"internal/schema":      1,
	"internal/session":     1,
	"internal/egress":      1,
	"internal/egressproxy": 1, // the egress proxy of a sandboxed server: egress at dial time
	"internal/pin":         1,
	"internal/envelope":    1,
	"internal/record":      1,
	"internal/chain":       1,
	"internal/approval":    1, // the questions put to a person, in a store processes share
	"internal/sharedstate": 1, // session state replicas share, in PostgreSQL
	"internal/sandbox":     1, // namespaces and Landlock around a server's process: syscalls, no policy
	"internal/auth":        1, // who calls aegis serve: OAuth JWTs and API keys, no policy
	// 2: the pipeline.
	"internal/gateway": 2,
	// 3: what builds it from a configuration and what relays through it.
	"internal/config":     3,
	"internal/offline":    3,
	"internal/proxy":      3,
	"internal/demoserver": 3,
	"internal/console":    3, // the local web console: approvals, decisions, pins
	"internal/serve":      3, // MCP over HTTP in front of the relay (aegis serve)
	// 4: the commands and the tests of the whole.
	"cmd/aegis":         4,
	"e2e":               4,
	"internal/archtest": 4,
	// An example a user runs: an MCP client of aegis serve, aegis's own
	// packages none of its business.
	"examples/serve/client": 4,
}

// sideways lists the imports allowed within one floor.
var sideways = map[string][]string{
	"internal/chain":       {"internal/record"},  // the log stores entries
	"internal/sharedstate": {"internal/session"}, // keeps what session.Store keeps, shared
	"internal/envelope":    {"internal/dlp"},     // an envelope is kept redacted
	"internal/offline":     {"internal/config"},  // a table names a configuration; pins live in its state
	"internal/egressproxy": {"internal/egress"},  // the proxy dials through the egress checker
	"internal/serve":       {"internal/proxy"},   // each HTTP session is a relay's client
}

// pure packages decide from values alone: no files, no network, no
// processes.
var pure = []string{"internal/plaintext", "internal/args", "internal/capability", "internal/binding", "internal/policy", "internal/dlp", "internal/shape", "internal/schema", "internal/record", "internal/jcsref", "internal/difftest"}

// syscall is allowed: package capability names errno values (EINVAL, ENOTDIR)
// that its injected Readlink returns, and makes no call.
var ioImports = []string{"os", "os/exec", "net", "net/http", "io/ioutil", "plugin", "unsafe"}

// unsafeViews are the pure packages that may import unsafe, and why; they may
// use it only to view bytes as a string (unsafe.String of unsafe.SliceData),
// never for pointer arithmetic or conversions between types.
var unsafeViews = map[string]string{
	"internal/args":   "a Doc reads the text it decodes or builds as a string without copying it (DecodeBorrowed, Builder.End)",
	"internal/record": "an Arena hands out the strings of decoded entries as views of one block of text it owns (recheck's million-entry scan)",
}

// sdkAllowed may import the MCP SDK; nothing below the protocol layer may.
var sdkAllowed = []string{"cmd/aegis", "e2e", "internal/proxy", "internal/demoserver", "examples/serve/client"}

func TestLayers(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		level, known := levels[rel]
		if !known {
			t.Errorf("%s: not in the level table of arch_test.go; decide where it sits", rel)
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") {
				dep := strings.TrimPrefix(imp, module+"/")
				switch dl, ok := levels[dep]; {
				case !ok:
					t.Errorf("%s imports %s, which is not in the level table", rel, dep)
				case dl > level, dl == level && !slices.Contains(sideways[rel], dep):
					t.Errorf("%s (floor %d) imports %s (floor %d): imports must point down", rel, level, dep, dl)
				}
			}
			if strings.HasPrefix(imp, "github.com/modelcontextprotocol/") && !slices.Contains(sdkAllowed, rel) {
				t.Errorf("%s imports the MCP SDK (%s); only %v may", rel, imp, sdkAllowed)
			}
			if imp == "unsafe" && unsafeViews[rel] != "" {
				continue // TestUnsafeViews says how
			}
			if slices.Contains(pure, rel) && slices.Contains(ioImports, imp) {
				t.Errorf("%s imports %s; it must do no I/O", rel, imp)
			}
		}
	}
}

func TestEveryPackageHasDoc(t *testing.T) {
	for _, p := range listPackages(t) {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc comment", p.ImportPath)
		}
	}
}

// TestUnsafeViews: a package of unsafeViews uses nothing of unsafe but
// String and SliceData.
func TestUnsafeViews(t *testing.T) {
	seen := 0
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if unsafeViews[rel] == "" {
			continue
		}
		seen++
		for _, name := range p.GoFiles {
			file := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			local := ""
			for _, im := range f.Imports {
				if im.Path.Value == `"unsafe"` {
					local = "unsafe"
					if im.Name != nil {
						local = im.Name.Name
					}
				}
			}
			if local == "" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && sel.Sel.Name != "String" && sel.Sel.Name != "SliceData" {
					t.Errorf("%s uses unsafe.%s; %s may only view bytes as a string", file, sel.Sel.Name, rel)
				}
				return true
			})
		}
	}
	if seen != len(unsafeViews) {
		t.Fatalf("found %d of the %d packages of unsafeViews", seen, len(unsafeViews))
	}
}

// TestLevelTableIsCurrent: every package the tables name exists, so that a
// package moved or renamed cannot leave a rule that checks nothing.
func TestLevelTableIsCurrent(t *testing.T) {
	exists := map[string]bool{}
	for _, p := range listPackages(t) {
		exists[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = true
	}
	for _, name := range slices.Concat(slices.Collect(maps.Keys(levels)), slices.Collect(maps.Keys(sideways)), pure, sdkAllowed) {
		if !exists[name] {
			t.Errorf("%s is in arch_test.go's tables but is no package", name)
		}
	}
}
