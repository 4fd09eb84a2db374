package binding

import (
	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// gitBuiltin models mcp-server-git (the reference git server, `uvx
// mcp-server-git`): every tool works in the repository at repo_path. What
// reads the working tree (status, diffs) reads the whole repository; what
// changes it (checkout) writes the whole of it; commits, branches and
// resets write the repository; git_add reads the files it stages, which
// are relative to the repository, and writes the index. The server takes
// repo_path as given (no "~").
func gitBuiltin() *Builtin {
	repo := "/repo_path"
	r := func() Arg { return curatedArg(repo, capability.FSRead, FormPath) }
	rt := func() Arg { a := r(); a.Subtree = true; return a }
	w := func() Arg { return curatedArg(repo, capability.FSWrite, FormPath) }
	wt := func() Arg { a := w(); a.Subtree = true; return a }
	files := curatedArg("/files/*", capability.FSRead, FormPath)
	rp, _ := args.ParsePointer(repo)
	files.RelativeTo = &rp
	dr, mu := capability.TierDataRead, capability.TierMutating
	return &Builtin{
		Name:        "git",
		Package:     "mcp-server-git",
		Description: "the reference git server (argument repo_path; git_add's files relative to it)",
		Tools: table(
			&Binding{Tool: "git_status", Tier: dr, Args: []Arg{rt()}},
			&Binding{Tool: "git_diff_unstaged", Tier: dr, Args: []Arg{rt()}},
			&Binding{Tool: "git_diff_staged", Tier: dr, Args: []Arg{rt()}},
			&Binding{Tool: "git_diff", Tier: dr, Args: []Arg{rt()}},
			&Binding{Tool: "git_log", Tier: dr, Args: []Arg{r()}},
			&Binding{Tool: "git_show", Tier: dr, Args: []Arg{rt()}},
			&Binding{Tool: "git_branch", Tier: dr, Args: []Arg{r()}},
			&Binding{Tool: "git_commit", Tier: mu, Args: []Arg{w()}},
			&Binding{Tool: "git_add", Tier: mu, Args: []Arg{files, w()}},
			&Binding{Tool: "git_reset", Tier: mu, Args: []Arg{w()}},
			&Binding{Tool: "git_create_branch", Tier: mu, Args: []Arg{w()}},
			&Binding{Tool: "git_checkout", Tier: mu, Args: []Arg{wt()}},
			&Binding{Tool: "git_init", Tier: mu, Args: []Arg{w()}},
		),
	}
}

// memoryBuiltin models the reference knowledge-graph server
// (@modelcontextprotocol/server-memory): its tools name entities and
// relations of its own graph, kept in a file of its configuration, and
// reach nothing else; the binding says which change the graph.
func memoryBuiltin() *Builtin {
	dr, mu := capability.TierDataRead, capability.TierMutating
	return &Builtin{
		Name:        "memory",
		Package:     "@modelcontextprotocol/server-memory",
		Description: "the reference knowledge-graph memory server (no resource arguments)",
		Tools: table(
			&Binding{Tool: "create_entities", Tier: mu},
			&Binding{Tool: "create_relations", Tier: mu},
			&Binding{Tool: "add_observations", Tier: mu},
			&Binding{Tool: "delete_entities", Tier: mu},
			&Binding{Tool: "delete_observations", Tier: mu},
			&Binding{Tool: "delete_relations", Tier: mu},
			&Binding{Tool: "read_graph", Tier: dr},
			&Binding{Tool: "search_nodes", Tier: dr},
			&Binding{Tool: "open_nodes", Tier: dr},
		),
	}
}
