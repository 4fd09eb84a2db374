// Package sandbox starts a local MCP server inside a kernel boundary built
// from the policy (DESIGN.md R29): on Linux, new user, mount and network
// namespaces and a Landlock domain, so that a server can reach only the
// files some rule could let a call reach, and the network only through
// aegis's egress proxy. It owns probing the kernel, the plan of one
// sandbox, the re-exec'd init that applies it, and the report of what was
// applied. What the plan grants comes from others: the trees from
// [policy.Set.FileReach] and aegis's protected paths (package config), the
// HTTP logic of the proxy from package egress; starting and relaying the
// server is package proxy's.
//
// # How a server starts
//
// [Command] returns an *exec.Cmd that runs aegis itself (/proc/self/exe)
// as the sandbox's first process, in new user, mount and network
// namespaces. That init reads its plan as JSON from an inherited memfd
// (never argv or the environment, which the server would inherit), then:
//
//   - makes every mount private, mounts a private tmpfs on /tmp (and
//     writes there the egress proxy's CA certificate, [Spec.CACert], for
//     the server's TLS clients to trust), an empty read-only tmpfs over
//     each masked directory (an empty file over a masked file), and
//     remounts the read-only trees read-only;
//   - brings up lo, and if the server has network, listens on
//     127.0.0.1:PORT inside the namespace and hands the listening socket
//     to aegis over an inherited socket pair (SCM_RIGHTS): aegis accepts
//     the server's connections from outside ([Sandbox.Listener]);
//   - applies Landlock: the granted read and write trees, the program and
//     its runtime, a few devices and /proc/self; TCP connect only to the
//     proxy's port and no bind (ABI 4); no signals to, and no abstract
//     sockets of, processes outside the sandbox (ABI 6);
//   - installs a seccomp filter: no UNIX sockets of its own (socket
//     files need no grant to be connected to), no io_uring;
//   - drops every capability, and execve's the server with a minimal
//     environment, its standard input, output and error untouched (the
//     pipes or sockets the relay gave it).
//
// The namespaces stop with the server: the init becomes the server (one
// process, no helper left inside).
//
// # Modes
//
// [Required] refuses to start unless the kernel offers every part, and
// names what is missing and why; [BestEffort] applies what the kernel
// offers and reports the rest ([Report.Missing]); [Off] starts the server
// as before. Other systems than Linux get [Off]'s behaviour, and the
// argument checks only.
//
// # Limits
//
//   - A deny rule that only some calls match (a tool, a principal, a role,
//     a condition) cannot be a mount: the mount would hold for every call.
//     Those trees stay visible; the policy still denies those calls.
//   - A masked or read-only tree that does not exist when the server
//     starts cannot be mounted over. Inside a write grant, Landlock keeps
//     the server from making it: the grant is replaced by the existing
//     entries of each directory on the way ([Report.Frozen]), so the
//     server can make, remove or rename nothing directly in those (a
//     grant of ~ with ~/.aws absent: no new file in ~). The report says
//     so; creating the tree, empty, lifts it. Without Landlock the report
//     says the tree is open. Inside a read grant the server cannot make
//     it, but a tree someone else makes while the server runs is not
//     hidden.
//   - /proc is granted only as /proc/self of the server's first process:
//     a child of the server cannot read its own /proc entry.
//   - Landlock before ABI 9 does not cover connect(2) on named UNIX
//     sockets, and a socket file needs no grant to be connected to: any
//     same-user daemon's (tmux, an ssh or gpg agent, docker) would drive
//     the server out of the sandbox. A seccomp filter therefore refuses
//     socket(AF_UNIX) (socketpair stays, for a runtime's own children),
//     io_uring_setup (whose operations pass no filter) and x32's calls.
package sandbox
