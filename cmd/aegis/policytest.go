package main

import (
	"context"
	"fmt"
	"io"

	"github.com/aegis-mcp/aegis/internal/offline"
)

// cmdPolicyTest runs policy test tables (package offline) and prints
// their failures, or with -v every test.
func cmdPolicyTest(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("policy test", stderr)
	verbose := fs.Bool("v", false, "print every test, not only failures")
	if err := fs.Parse(argv); err != nil {
		return exitError{2}
	}
	if fs.NArg() == 0 {
		return usageError(stderr, "usage: aegis policy test [-v] FILE...")
	}
	failed, total := 0, 0
	for _, file := range fs.Args() {
		results, err := offline.Run(context.Background(), file)
		if err != nil {
			return err
		}
		for _, r := range results {
			total++
			switch {
			case !r.Pass:
				failed++
				fmt.Fprintf(stdout, "FAIL %s: %s\n     want %s", r.Pos, r.Name, r.Want)
				if len(r.WantRules) > 0 {
					fmt.Fprintf(stdout, " by %v", r.WantRules)
				}
				fmt.Fprintf(stdout, ", got %s by %v: %s\n", r.Got, r.GotRules, r.Reason)
			case *verbose:
				fmt.Fprintf(stdout, "ok   %s: %s\n", r.Pos, r.Name)
			}
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", total-failed, failed)
	if failed > 0 {
		return exitError{1}
	}
	return nil
}
