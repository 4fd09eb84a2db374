package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"sort"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/record"
)

// cmdRecheck replays a chain against another policy, from the chain alone,
// and lists every decision that would flip. Exit status: 0 nothing flips,
// 3 something flips, 1 an error.
func cmdRecheck(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("recheck", stderr)
	newPolicy := fs.String("policy", "", "the policy `file` to replay against (required)")
	cfgPath := fs.String("config", "", "configuration `file` for the bindings and home (default: as aegis run)")
	dirFlag := fs.String("chain", "", "chain `directory` (default: the state directory's)")
	server := fs.String("server", "", "the `server` whose chain to replay")
	quiet := fs.Bool("q", false, "print only the counts")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 || *newPolicy == "" {
		return usageError(stderr, "usage: aegis recheck --policy FILE [--config FILE] [--chain DIR | --server NAME]")
	}
	if *cfgPath == "" {
		state, err := config.DefaultState()
		if err != nil {
			return err
		}
		*cfgPath = config.DefaultConfig(state)
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(*newPolicy)
	if err != nil {
		return err
	}
	p, err := policy.Parse(*newPolicy, data, cfg.PolicyOptions)
	if err != nil {
		return err
	}
	eng, err := gateway.New(p, cfg.Servers, &gateway.Options{Limits: cfg.Limits})
	if err != nil {
		return err
	}
	lanes, err := allLanes(*dirFlag, *server)
	if err != nil {
		return err
	}
	var total, flips, kept, answers, unverified int
	perRule := map[string]int{}
	// A recheck reads every entry once and keeps little: fewer, larger
	// collections cost less CPU than the default.
	debug.SetGCPercent(400)
	for _, ln := range lanes {
		// The tail's signature; the scan checks every link on its way, and
		// a lane's flips are printed only once its scan found the lane
		// whole, so that none is shown vouched for before an alteration
		// further on turns up.
		sig, err := chain.LaneSignature(ln.Dir)
		if err != nil {
			return err
		}
		var lines bytes.Buffer
		err = eng.RecheckChain(ln.Dir, func(e *record.Entry, v gateway.Verdict, ok bool) error {
			total++
			mark := ""
			if !sig.Covers(e) {
				unverified++
				mark = " [UNVERIFIED]"
			}
			if !ok {
				if slices.Contains(e.Rules, gateway.RuleApproval) {
					answers++ // a person's answer to an ask: the ask itself is rechecked
				} else {
					kept++
				}
				return nil
			}
			now := v.Effect.String()
			if now == e.Decision {
				return nil
			}
			flips++
			rules := v.Decision.Rules()
			if len(rules) == 0 {
				rules = []string{"(default deny)"}
			}
			for _, r := range rules {
				perRule[r]++
			}
			if !*quiet {
				fmt.Fprintf(&lines, "seq %s: %s by %q: %s -> %s: %s%s\n", ln.EntryName(e.Seq), target(e.Server, e.Method, e.Tool), e.Principal, e.Decision, now, escaped(v.Reason()), mark)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := lines.WriteTo(stdout); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%d entries, %d flip, %d decided by aegis's own checks and kept", total, flips, kept)
	if answers > 0 {
		fmt.Fprintf(stdout, ", %d a person's answers to asks, kept (their asks are rechecked)", answers)
	}
	fmt.Fprintln(stdout)
	switch {
	case unverified == 1:
		fmt.Fprintln(stdout, "1 entry after the last signature is not vouched for by the chain's key (aegis verify says more)")
	case unverified > 1:
		fmt.Fprintf(stdout, "%d entries after the last signature are not vouched for by the chain's key (aegis verify says more)\n", unverified)
	}
	ids := make([]string, 0, len(perRule))
	for id := range perRule {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(stdout, "  %5d  %s\n", perRule[id], id)
	}
	if flips > 0 {
		return exitError{3}
	}
	return nil
}
