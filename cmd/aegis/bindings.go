package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aegis-mcp/aegis/internal/binding"
)

// cmdBindings prints the curated binding tables, so a user can see what a
// builtin server's tools are taken to do.
func cmdBindings(argv []string, stdout, stderr io.Writer) error {
	if len(argv) > 0 && argv[0] == "propose" {
		return cmdPropose(argv[1:], stdout, stderr)
	}
	all := binding.Builtins()
	names := binding.BuiltinNames()
	if len(argv) > 0 {
		names = argv
	}
	for _, name := range names {
		b := all[name]
		if b == nil {
			return fmt.Errorf("no builtin binding table %q (have %v)", name, binding.BuiltinNames())
		}
		fmt.Fprintf(stdout, "%s: %s (%s)\n", b.Name, b.Description, b.Package)
		printTable(stdout, "", b.Tools)
		printTable(stdout, "prompt ", b.Prompts)
	}
	return nil
}

// printTable prints a binding table's bindings, sorted by name, each after
// prefix.
func printTable(w io.Writer, prefix string, t binding.Table) {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %s%s\n", prefix, t[n])
	}
}

// cmdPropose prints proposed bindings for a server's tools, from the
// definitions aegis run pinned: `aegis bindings propose --server NAME`.
// A person reviews the file and names it in the configuration; it
// authorises nothing before.
func cmdPropose(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("bindings propose", stderr)
	server := fs.String("server", "", "the `server` whose pinned tools to bind (default: the only server with pins)")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis bindings propose [--server NAME] > NAME-bindings.yaml")
	}
	path, err := pinFile(*server)
	if err != nil {
		return err
	}
	s, err := openPins(path)
	if err != nil {
		return err
	}
	all, err := s.All()
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return fmt.Errorf("%s holds no tools: run the server under aegis run once, so that its tools are pinned", path)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	defs, shapes := map[string]json.RawMessage{}, map[string]string{}
	for tool, p := range all {
		defs[tool], shapes[tool] = p.Def, p.Shape.String()
		if p.Held() {
			// The definition a person would accept next: propose for it.
			defs[tool], shapes[tool] = p.Pending.Def, p.Pending.Shape.String()
		}
	}
	ps, err := binding.Propose(name, defs, shapes)
	if err != nil {
		return err
	}
	_, err = stdout.Write(binding.ProposalFile(name, ps))
	return err
}
