package binding

import "github.com/aegis-mcp/aegis/internal/capability"

// commandsBuiltin models mcp-server-commands (0.5.0): its tool run_command
// runs a shell command line (with node's exec: /bin/sh -c) in workdir, and
// its prompt run_command runs one too, when the client gets the prompt,
// and puts the output in the prompt's messages. The working directory
// is where the command's relative paths land, for reading and writing.
func commandsBuiltin() *Builtin {
	x := func(ptr string) Arg { return curatedArg(ptr, capability.Exec, FormCommand) }
	return &Builtin{
		Name:        "commands",
		Package:     "mcp-server-commands",
		Description: "a shell-command server (tool and prompt run_command, argument command)",
		Tools: table(
			&Binding{Tool: "run_command", Tier: capability.TierMutating, Args: []Arg{
				x("/command"),
				curatedArg("/workdir", capability.FSRead, FormPath),
				curatedArg("/workdir", capability.FSWrite, FormPath),
			}},
		),
		Prompts: table(
			&Binding{Tool: "run_command", Tier: capability.TierMutating, Args: []Arg{x("/command")}},
		),
	}
}
