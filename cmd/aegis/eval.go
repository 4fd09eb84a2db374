package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/config"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/offline"
)

func cmdEval(argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("eval", stderr)
	cfgPath := fs.String("config", "", "configuration `file` (required)")
	if err := fs.Parse(argv); err != nil {
		return exitError{2}
	}
	if *cfgPath == "" || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis eval --config FILE < events.jsonl")
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	eng, err := cfg.Engine()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	in := bufio.NewReaderSize(stdin, 64<<10)
	ctx := context.Background()
	state, err := config.DefaultState()
	if err != nil {
		return err
	}
	ev := &evaluator{d: offline.NewDecider(eng, offline.StatePins(state))}
	for n := 1; ; n++ {
		line, err := offline.ReadLine(in)
		if len(bytes.TrimSpace(line)) > 0 || err == offline.ErrLineTooLong {
			if err == offline.ErrLineTooLong {
				writeJSON(out, errorLine{Line: n, Error: fmt.Sprintf("line %d: longer than %d bytes", n, offline.MaxLine)})
			} else {
				writeJSON(out, ev.line(ctx, n, line))
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil && err != offline.ErrLineTooLong {
			return err
		}
	}
}

type errorLine struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

type resultLine struct {
	Line     int             `json:"line"`
	Result   string          `json:"result"` // recorded | redacted | withheld
	Rules    []string        `json:"rules,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Findings []findingJSON   `json:"findings,omitempty"`
	Redacted json.RawMessage `json:"redacted,omitempty"` // the result as passed on
}

// findingJSON is a DLP finding: its kind and where, never its text.
type findingJSON struct {
	Kind    string `json:"kind"`
	Pointer string `json:"pointer"`
	InKey   bool   `json:"in_key,omitempty"`
}

func findingsJSON(fs []dlp.Located) []findingJSON {
	var out []findingJSON
	for _, f := range fs {
		out = append(out, findingJSON{Kind: string(f.Kind), Pointer: f.Pointer, InKey: f.InKey})
	}
	return out
}

// decisionLine is the output for one call.
type decisionLine struct {
	Line         int             `json:"line"`
	Decision     string          `json:"decision"`
	Mode         string          `json:"mode"`
	Would        string          `json:"would,omitempty"`
	Rules        []string        `json:"rules"`
	Capabilities []capJSON       `json:"capabilities"`
	Reason       string          `json:"reason"`
	Findings     []findingJSON   `json:"findings,omitempty"`
	Arguments    json.RawMessage `json:"arguments"`
}

// evaluator turns the events of one `aegis eval` run into output lines.
type evaluator struct{ d *offline.Decider }

func (e *evaluator) line(ctx context.Context, n int, line []byte) any {
	ev, err := offline.ParseEvent(line)
	if err != nil {
		return errorLine{Line: n, Error: fmt.Sprintf("line %d: %v", n, err)}
	}
	if ev.IsResult() {
		out, found, err := e.d.Result(ev)
		var refusal *gateway.Refusal
		switch {
		case errors.As(err, &refusal):
			return resultLine{Line: n, Result: "withheld", Rules: []string{refusal.Rule}, Reason: refusal.Error(), Findings: findingsJSON(found)}
		case err != nil:
			return errorLine{Line: n, Error: fmt.Sprintf("line %d: %v", n, err)}
		case out != nil:
			return resultLine{Line: n, Result: "redacted", Rules: []string{gateway.RuleDLP}, Findings: findingsJSON(found), Redacted: out}
		}
		return resultLine{Line: n, Result: "recorded", Findings: findingsJSON(found)}
	}
	v, err := e.d.Call(ctx, ev)
	if err != nil {
		return errorLine{Line: n, Error: fmt.Sprintf("line %d: %v", n, err)}
	}
	return decisionOf(n, e.d.Engine(), &v)
}

func decisionOf(n int, eng *gateway.Engine, v *gateway.Verdict) decisionLine {
	d := decisionLine{
		Line:         n,
		Decision:     v.Effect.String(),
		Mode:         eng.Policy().Mode().String(),
		Rules:        []string{},
		Capabilities: capsJSON(v.Caps),
		Reason:       v.Reason(),
		Arguments:    json.RawMessage("null"),
	}
	d.Rules = append(d.Rules, v.Rules()...)
	d.Findings = findingsJSON(v.Findings)
	if v.Err == nil && v.Ask == nil {
		if w := v.Decision.Would(); w != v.Effect {
			d.Would = w.String()
		}
	}
	if v.Arguments != nil {
		var b bytes.Buffer
		if json.Compact(&b, v.Arguments) == nil {
			d.Arguments = b.Bytes()
		}
	}
	return d
}

// capJSON is a capability as eval prints it: the kind and its canonical
// fields.
type capJSON struct {
	Kind    string   `json:"kind"`
	Path    string   `json:"path,omitempty"`
	Subtree bool     `json:"subtree,omitempty"`
	Scheme  string   `json:"scheme,omitempty"`
	Host    string   `json:"host,omitempty"`
	Port    uint16   `json:"port,omitempty"`
	URL     string   `json:"url,omitempty"`
	Classes []string `json:"classes,omitempty"`
	Program string   `json:"program,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Shell   bool     `json:"shell,omitempty"`
	Command string   `json:"command,omitempty"`
	IDKind  string   `json:"id_kind,omitempty"`
	ID      string   `json:"id,omitempty"`
	// Unproven: an id the server did not return (provenance flag).
	Unproven bool `json:"unproven,omitempty"`
}

func capsJSON(caps []capability.Capability) []capJSON {
	out := make([]capJSON, 0, len(caps))
	for _, c := range caps {
		j := capJSON{
			Kind: c.Kind.String(), Path: c.Path, Subtree: c.Subtree,
			Scheme: c.Scheme, Host: c.Host, Port: c.Port, URL: c.URL,
			Program: c.Program, Argv: c.Argv, Shell: c.Shell, Command: c.Command,
			IDKind: c.IDKind, ID: c.ID, Unproven: c.Unproven,
		}
		if c.Kind == capability.NetConnect || c.Kind == capability.NetLink {
			j.Classes = c.Classes.Names()
		}
		out = append(out, j)
	}
	return out
}

// writeJSON writes v as one JSON line, without HTML escaping: the output is
// read by people and programs, not pasted into pages.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		enc.Encode(errorLine{Error: err.Error()})
	}
}
