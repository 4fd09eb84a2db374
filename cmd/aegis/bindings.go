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
		tools := make([]string, 0, len(b.Tools))
		for t := range b.Tools {
			tools = append(tools, t)
		}
		sort.Strings(tools)
		for _, t := range tools {
			fmt.Fprintf(stdout, "  %s\n", b.Tools[t])
		}
		prompts := make([]string, 0, len(b.Prompts))
		for p := range b.Prompts {
			prompts = append(prompts, p)
		}
		sort.Strings(prompts)
		for _, p := range prompts {
			fmt.Fprintf(stdout, "  prompt %s\n", b.Prompts[p])
		}
	}
	return nil
}
