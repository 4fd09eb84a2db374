package archtest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
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

// layers says which of aegis's own packages each package may import. A
// package not listed here may import none: adding a package means deciding
// where it sits.
var layers = map[string][]string{
	"cmd/aegis":           {"*"},
	"e2e":                 {"*"},
	"internal/archtest":   {},
	"internal/args":       {},
	"internal/capability": {},
	"internal/strictyaml": {},
	"internal/binding":    {"internal/args", "internal/capability", "internal/strictyaml"},
	"internal/policy":     {"internal/capability", "internal/strictyaml"},
	"internal/record":     {"internal/capability"},
	"internal/jcsref":     {},
	"internal/chain":      {"internal/record"},
	"internal/gateway":    {"internal/args", "internal/binding", "internal/capability", "internal/chain", "internal/record", "internal/policy", "internal/envelope", "internal/dlp", "internal/shape", "internal/session", "internal/egress", "internal/pin", "internal/schema"},
	"internal/config":     {"internal/args", "internal/binding", "internal/capability", "internal/gateway", "internal/policy", "internal/strictyaml", "internal/egress", "internal/session", "internal/shape", "internal/dlp"},
	"internal/proxy":      {"internal/args"},
	"internal/demoserver": {},
	"internal/dlp":        {"internal/args"},
	"internal/shape":      {"internal/args"},
	"internal/session":    {"internal/args", "internal/capability"},
	"internal/egress":     {"internal/capability"},
	"internal/pin":        {"internal/args"},
	"internal/envelope":   {"internal/args", "internal/dlp"},
	"internal/schema":     {"internal/args"},
}

// pure packages decide from values alone: no files, no network, no
// processes.
var pure = []string{"internal/args", "internal/capability", "internal/binding", "internal/policy", "internal/dlp", "internal/shape", "internal/schema", "internal/record", "internal/jcsref"}

// syscall is allowed: package capability names errno values (EINVAL, ENOTDIR)
// that its injected Readlink returns, and makes no call.
var ioImports = []string{"os", "os/exec", "net", "net/http", "io/ioutil", "plugin", "unsafe"}

// unsafeViews are the pure packages that may import unsafe, and why; they may
// use it only to view bytes as a string (unsafe.String of unsafe.SliceData),
// never for pointer arithmetic or conversions between types.
var unsafeViews = map[string]string{
	"internal/args":   "a Doc reads the text it decodes or builds as a string without copying it (DecodeBorrowed, Builder.End)",
	"internal/record": "an Arena's strings are views of string bytes it copied and never writes again (Arena.newString)",
}

// sdkAllowed may import the MCP SDK; nothing below the protocol layer may.
var sdkAllowed = []string{"cmd/aegis", "e2e", "internal/proxy", "internal/demoserver"}

func TestLayers(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		allowed, known := layers[rel]
		if !known {
			t.Errorf("%s: not in the layer table of arch_test.go; decide where it sits", rel)
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") {
				dep := strings.TrimPrefix(imp, module+"/")
				if !slices.Contains(allowed, "*") && !slices.Contains(allowed, dep) {
					t.Errorf("%s imports %s: imports must point down (allowed: %v)", rel, dep, allowed)
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
