package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aegis-mcp/aegis/internal/record"

	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/offline"
)

// cmdExplain prints why one call gets its decision: the binding, the
// capabilities derived from its arguments, and every rule that matched.
func cmdExplain(argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("explain", stderr)
	cfgPath := fs.String("config", "", "configuration `file` (required)")
	if err := fs.Parse(argv); err != nil {
		return exitError{2}
	}
	if *cfgPath == "" || fs.NArg() > 1 {
		return usageError(stderr, "usage: aegis explain --config FILE [EVENT]")
	}
	var line []byte
	if fs.NArg() == 1 {
		line = []byte(fs.Arg(0))
	} else {
		b, err := io.ReadAll(io.LimitReader(stdin, offline.MaxLine+1))
		if err != nil {
			return err
		}
		line = []byte(strings.TrimSpace(string(b)))
	}
	ev, err := offline.ParseEvent(line)
	if err != nil {
		return fmt.Errorf("event: %w", err)
	}
	if ev.IsResult() {
		return fmt.Errorf("event: a result, not a call; explain takes a call")
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	eng, err := cfg.Engine()
	if err != nil {
		return err
	}
	state, err := config.DefaultState()
	if err != nil {
		return err
	}
	v, x, pinsKnown, err := offline.NewDecider(eng, offline.StatePins(state)).Explain(context.Background(), ev)
	if err != nil {
		return err
	}
	c := ev.Call()
	fmt.Fprintf(stdout, "call     %s by %q\n", target(ev.Server, c.Method, c.Tool), ev.Principal)
	if s := eng.Server(ev.Server); s != nil {
		switch m, decided := gateway.DecidedMethod(c.Method); {
		case c.Method == "" && s.Bindings[c.Tool] != nil:
			fmt.Fprintf(stdout, "binding  %s\n", s.Bindings[c.Tool])
		case c.Method == "":
			fmt.Fprintf(stdout, "binding  none: the tool is unbound (only rules saying unbound: true allow it)\n")
		case (c.Method == "prompts/get" || c.Method == "completion/complete" && !c.Resource) && s.Prompts[c.Tool] != nil:
			fmt.Fprintf(stdout, "binding  prompt %s\n", s.Prompts[c.Tool])
		case c.Method == "prompts/get" || c.Method == "completion/complete" && !c.Resource:
			fmt.Fprintf(stdout, "binding  none: the prompt is unbound (only rules saying unbound: true allow it)\n")
		case decided && !m.FromServer && c.Resource:
			fmt.Fprintf(stdout, "binding  the resource's URI: a file: URI is an fs.read, a network URI a net.connect\n")
		case !decided:
			fmt.Fprintf(stdout, "binding  none: a method aegis does not know (decided as unbound, if the configuration lists it)\n")
		}
	}
	if eng.Server(ev.Server) != nil && !pinsKnown && c.Method == "" {
		fmt.Fprintf(stdout, "pins     none: aegis run never listed this server's tools, so the pin and schema steps are skipped\n")
	}
	for _, c := range capsJSON(v.Caps) {
		fmt.Fprintf(stdout, "derived  %s\n", escaped(capLine(c)))
	}
	fmt.Fprintf(stdout, "decision %s (policy mode %s)\n", v.Effect, eng.Policy().Mode())
	fmt.Fprintf(stdout, "reason   %s\n", escaped(v.Reason()))
	if x != nil {
		fmt.Fprintf(stdout, "\n%s", x)
	}
	return nil
}

func capLine(c capJSON) string {
	if c.Host == "" {
		// The one spelling of a capability for a person: record's.
		return (&record.Cap{Kind: c.Kind, Path: c.Path, Subtree: c.Subtree, Program: c.Program, Argv: c.Argv,
			Shell: c.Shell, Command: c.Command, IDKind: c.IDKind, ID: c.ID, Unproven: c.Unproven}).Text()
	}
	// A host with its address classes, which the record does not keep.
	s := c.Kind + " "
	if c.URL != "" {
		s += c.URL
	} else {
		s += c.Host
	}
	s += fmt.Sprintf(" (host %s, port %d", c.Host, c.Port)
	if len(c.Classes) > 0 {
		s += ", " + strings.Join(c.Classes, "|")
	}
	return s + ")"
}
