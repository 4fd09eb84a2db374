package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/aegis-mcp/aegis/internal/binding"
)

// cmdBindings prints the curated binding tables, so a user can see what a
// builtin server's tools are taken to do.
func cmdBindings(argv []string, stdout io.Writer) error {
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
