// Command aegis is a tool-call firewall for AI agents: it decides every MCP
// tool call by what its arguments do.
//
// Usage:
//
//	aegis run [--config FILE] -- CMD ARGS...  wrap a stdio MCP server
//	aegis eval --config FILE < events.jsonl   decide JSON Lines events, one JSON line out per line in
//	aegis explain --config FILE [EVENT]       say why one call gets its decision
//	aegis policy test FILE...                 run tables of calls with expected decisions
//	aegis bindings [NAME]                     print the curated binding tables
//	aegis version
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/aegis-mcp/aegis/internal/sandbox"
)

const usage = `usage:
  aegis demo                                a real session through aegis run, then verify and recheck
  aegis run [--config FILE] [--server NAME] -- CMD ARG...  wrap a stdio MCP server
  aegis serve [--config FILE] [--listen ADDR] serve the configured servers over MCP Streamable HTTP
  aegis api-key                             a new API key for aegis serve, and the hash its configuration takes
  aegis eval --config FILE < events.jsonl   decide JSON Lines events (calls and results)
  aegis explain --config FILE [EVENT]       explain the decision for one call event (JSON; stdin if absent)
  aegis policy test FILE...                 run policy test tables
  aegis verify [--server NAME] [--key FILE] verify a decision chain offline
  aegis recheck --policy FILE [--server NAME] replay the chain against another policy
  aegis log [--server NAME] [-n N] [--json] show recent decisions
  aegis key [--server NAME]                 print the chain's public key
  aegis envelope [--server NAME] SEQ       the redacted input of one recorded call
  aegis pins [list|accept|forget] [--server NAME] [TOOL...]
                                            the pinned tool definitions; accept a held tool
  aegis approvals [list|show|approve|deny] [--scope call|session] [ID]
                                            the calls waiting for a person; answer one
  aegis console [--addr 127.0.0.1:PORT]     a local web console: approvals, decisions, pins
  aegis bindings [NAME]                     print the curated binding tables
  aegis bindings propose [--server NAME]    propose bindings for a server's pinned tools, to review
  aegis version                             print the version
`

// version is set by the linker for releases.
var version = "devel"

// exitError carries an exit status other than 1.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	// The init of a server's sandbox is aegis re-exec'd with an argv no
	// command spells; it is not in run's table, so no argument list
	// reaches it. It applies its plan and becomes the server.
	if sandbox.IsInit() {
		os.Exit(sandbox.Init())
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status. Exit
// statuses: 0 success, 1 a failure or a failed test, 2 bad usage.
func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(argv) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch cmd, rest := argv[0], argv[1:]; cmd {
	case "eval":
		err = cmdEval(rest, stdin, stdout, stderr)
	case "run":
		err = cmdRun(rest, stdin, stdout, stderr)
	case "serve":
		err = cmdServe(rest, stdout, stderr)
	case "api-key":
		err = cmdAPIKey(rest, stdout, stderr)
	case "explain":
		err = cmdExplain(rest, stdin, stdout, stderr)
	case "policy":
		if len(rest) == 0 || rest[0] != "test" {
			fmt.Fprint(stderr, "usage: aegis policy test FILE...\n")
			return 2
		}
		err = cmdPolicyTest(rest[1:], stdout, stderr)
	case "verify":
		err = cmdVerify(rest, stdout, stderr)
	case "demo":
		err = cmdDemo(rest, stdout, stderr)
	case "demo-server":
		err = cmdDemoServer(rest, stdin, stdout, stderr)
	case "recheck":
		err = cmdRecheck(rest, stdout, stderr)
	case "log":
		err = cmdLog(rest, stdout, stderr)
	case "key":
		err = cmdKey(rest, stdout, stderr)
	case "envelope":
		err = cmdEnvelope(rest, stdout, stderr)
	case "pins":
		err = cmdPins(rest, stdout, stderr)
	case "bindings":
		err = cmdBindings(rest, stdout, stderr)
	case "approvals":
		err = cmdApprovals(rest, stdout, stderr)
	case "console":
		err = cmdConsole(rest, stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "aegis %s\n", version)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "aegis: unknown command %q\n%s", cmd, usage)
		return 2
	}
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, flag.ErrHelp):
		return 2
	default:
		fmt.Fprintf(stderr, "aegis: %v\n", err)
		return 1
	}
}

// newFlags returns a flag set for a subcommand that reports its errors on
// stderr and returns them rather than exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("aegis "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// usageError is bad usage of a subcommand: exit status 2.
func usageError(stderr io.Writer, format string, args ...any) error {
	fmt.Fprintf(stderr, "aegis: "+format+"\n", args...)
	return exitError{2}
}
