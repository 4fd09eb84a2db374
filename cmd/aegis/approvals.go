package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/config"
)

const approvalsUsage = "usage: aegis approvals [list [--all]] | show ID | approve [--scope call|session] ID | deny ID   [--json]"

// cmdApprovals lists the calls waiting for a person and answers them:
// `aegis approvals [list|show|approve|deny]`. An ID may be given by a
// unique prefix of at least 4 digits.
func cmdApprovals(argv []string, stdout, stderr io.Writer) error {
	verb := "list"
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		verb, argv = argv[0], argv[1:]
	}
	fs := newFlags("approvals "+verb, stderr)
	all := fs.Bool("all", false, "list: also the approvals answered or expired in the last 7 days")
	scope := fs.String("scope", "call", "approve: `call` (this call) or session (the same capabilities for the rest of the session)")
	asJSON := fs.Bool("json", false, "print JSON")
	cfgPath := fs.String("config", "", "the configuration `file` that says where the approvals are (its state: postgres); default: as aegis run, if it exists")
	if err := fs.Parse(argv); err != nil {
		return exitError{2}
	}
	state, err := config.DefaultState()
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch verb {
	case "list":
		if fs.NArg() != 0 {
			return usageError(stderr, approvalsUsage)
		}
	case "show", "approve", "deny":
		if fs.NArg() != 1 {
			return usageError(stderr, approvalsUsage)
		}
	default:
		return usageError(stderr, "approvals: unknown verb %q\n%s", verb, approvalsUsage)
	}
	var sc approval.Scope
	if verb == "approve" {
		if sc, err = approval.ParseScope(*scope); err != nil {
			return usageError(stderr, "approvals approve: %v", err)
		}
	}
	cfg, err := optionalConfig(*cfgPath, state)
	if err != nil {
		return err
	}
	st, err := openApprovals(cfg, state)
	if err != nil {
		return err
	}
	defer st.Close()
	switch verb {
	case "list":
		aps, err := st.List(ctx, *all)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSONLines(stdout, aps)
		}
		if len(aps) == 0 {
			fmt.Fprintln(stdout, "no call is waiting for a person")
		}
		for _, ap := range aps {
			printApproval(stdout, ap, false)
		}
		return nil
	case "show":
		ap, err := st.Get(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSONLines(stdout, []*approval.Approval{ap})
		}
		printApproval(stdout, ap, true)
		return nil
	}
	by := "unknown"
	if u, err := user.Current(); err == nil {
		by = u.Username
	}
	ap, err := st.Answer(ctx, fs.Arg(0), approval.Answer{Approve: verb == "approve", Scope: sc, By: by, Channel: approval.ChannelCLI})
	if err != nil {
		if errors.Is(err, approval.ErrExpired) {
			return fmt.Errorf("%w: its call was refused, or it went; a new call is a new question", err)
		}
		return err
	}
	if *asJSON {
		return printJSONLines(stdout, []*approval.Approval{ap})
	}
	what := "denied"
	if ap.Answer.Approve {
		what = "approved for " + map[approval.Scope]string{approval.ScopeCall: "this call", approval.ScopeSession: "the rest of the session"}[ap.Answer.Scope]
	}
	fmt.Fprintf(stdout, "%s %s: %s\n", ap.ID, what, callName(ap))
	return nil
}

func printJSONLines(w io.Writer, aps []*approval.Approval) error {
	for _, ap := range aps {
		b, err := json.Marshal(ap)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
	}
	return nil
}

func callName(ap *approval.Approval) string {
	return strings.TrimSpace(target(ap.Server, ap.Method, ap.Tool))
}

// printApproval prints one approval: a line, and with detail every
// argument and what aegis derived from it.
func printApproval(w io.Writer, ap *approval.Approval, detail bool) {
	state := string(ap.State)
	if ap.State == approval.Pending {
		state = "pending, " + time.Until(ap.Expires).Round(time.Second).String() + " left"
	}
	fmt.Fprintf(w, "%s  %s  %s  principal %s, session %s  [%s]\n", ap.ID, ap.Created.Local().Format("15:04:05"), callName(ap), shown(ap.Principal), shown(ap.Session), state)
	for _, c := range ap.Caps {
		fmt.Fprintf(w, "    %s\n", escaped(c))
	}
	fmt.Fprintf(w, "    asked by %s: %s\n", strings.Join(ap.Rules, ", "), escaped(ap.Reason))
	if !detail {
		return
	}
	// The arguments are the client's JSON text: a carriage return between
	// tokens, or DEL or a C1 control in a string, is valid there.
	fmt.Fprintf(w, "    arguments (secrets redacted): %s\n", escaped(string(ap.Arguments)))
	fmt.Fprintf(w, "    chain entry %d%s, arguments hash %s, policy hash %s\n", ap.Seq, laneSuffix(ap.Lane), ap.ArgsHash, ap.PolicyHash)
	if a := ap.Answer; a != nil {
		verdict := "denied"
		if a.Approve {
			verdict = "approved (" + string(a.Scope) + ")"
		}
		fmt.Fprintf(w, "    %s by %s through %s at %s\n", verdict, a.By, a.Channel, a.At.Local().Format(time.DateTime))
	}
}

func laneSuffix(lane string) string {
	if lane == "" {
		return ""
	}
	return "@" + lane
}

// openApprovals opens the approvals of cfg: in its state: postgres
// database when it names one (shared by replicas), else in the state
// directory's file. cfg may be nil.
func openApprovals(cfg *config.Config, state config.State) (*approval.Store, error) {
	if cfg != nil && cfg.StatePostgres != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return approval.OpenPostgres(ctx, cfg.StatePostgres, nil)
	}
	return approval.Open(state.Approvals(), nil)
}

// optionalConfig loads the configuration at path, or the default one if
// path is "" and it exists; nil, nil when there is none to load.
func optionalConfig(path string, state config.State) (*config.Config, error) {
	if path == "" {
		path = config.DefaultConfig(state)
		if _, err := os.Stat(path); err != nil {
			return nil, nil
		}
	}
	return config.Load(path)
}
